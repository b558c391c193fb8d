package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/cassettes"
	"github.com/llmproxy/llmproxy/fixture"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/wire"
)

// demoQuestion is the user turn of the demo conversation.
const demoQuestion = "What's the weather in Paris?"

// runDemo replays the bundled demo cassette through an in-process proxy on a
// free port and a real openai-go client, and prints the conversation.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", stderr)
	if err := parseFlags(fs, args, nil); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "llmproxy-demo-*")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "demo.cassette")
	if err := os.WriteFile(path, cassettes.Demo, 0o644); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	// The application's weather tool answers from the cassette's fixture:
	// the cassette is scrubbed, so the call is call_weather and its result
	// a weather preset fixture.
	weather, err := fixture.NewCassetteExecutor(path)
	if err != nil {
		return fmt.Errorf("demo: bundled cassette: %w", err)
	}
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("demo: bundled cassette: %w", err)
	}
	defer c.Close()
	srv, err := proxy.New(proxy.Config{Mode: proxy.ModeReplay, Cassette: c, Transport: noNetwork{}})
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("demo: listen: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()

	base := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "llmproxy demo: replaying cassettes/demo.cassette through a proxy at %s (no network, no API key)\n\n", base)
	if err := demoConversation(ctx, base+"/v1/", stdout, weather); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	// Let the last response's handler finish before counting what was served.
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	n, _ := c.Len()
	unused, _ := srv.AllUnused()
	fmt.Fprintf(stdout, "\nreplayed %d of %d recorded interactions; upstream connections: 0\n", n-len(unused[path]), n)
	return nil
}

// noNetwork refuses every upstream connection: the demo proves replay never dials.
type noNetwork struct{}

func (noNetwork) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("the demo never contacts an upstream")
}

// demoTool runs the demo application's weather tool: a real weather
// service when the cassette is recorded, fixture.Executor on the scrubbed
// cassette when the demo replays it.
type demoTool interface {
	Execute(ctx context.Context, call wire.ToolCall) (wire.ToolResult, error)
}

// demoConversation is the demo application: a streamed tool loop with a
// weather tool, printed as it goes. The same code recorded the cassette.
func demoConversation(ctx context.Context, baseURL string, w io.Writer, weather demoTool) error {
	client := openai.NewClient(option.WithBaseURL(baseURL), option.WithAPIKey("sk-demo-not-a-real-key"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{
		Model: openai.ChatModelGPT4oMini,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage(demoQuestion),
		},
		Tools: []openai.ChatCompletionToolUnionParam{
			openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
				Name:        "weather",
				Description: openai.String("Current weather for a location."),
				Parameters: openai.FunctionParameters{
					"type": "object",
					"properties": map[string]any{
						"location": map[string]any{"type": "string"},
						"unit":     map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
					},
					"required":             []string{"location"},
					"additionalProperties": false,
				},
			}),
		},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	fmt.Fprintf(w, "user: %s\n", demoQuestion)
	for turn := 0; turn < 4; turn++ {
		stream := client.Chat.Completions.NewStreaming(ctx, params)
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			return err
		}
		if len(acc.Choices) == 0 {
			return errors.New("the model sent no choice")
		}
		msg := acc.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			fmt.Fprintf(w, "assistant: %s\n", msg.Content)
			return nil
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			fmt.Fprintf(w, "assistant calls %s(%s) [%s]\n", tc.Function.Name, tc.Function.Arguments, tc.ID)
			if tc.Function.Name != "weather" {
				return fmt.Errorf("unexpected tool %q", tc.Function.Name)
			}
			result, err := weather.Execute(ctx, wire.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: []byte(tc.Function.Arguments)})
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "tool %s → %s\n", tc.Function.Name, result.Content)
			params.Messages = append(params.Messages, openai.ToolMessage(string(result.Content), tc.ID))
		}
	}
	return errors.New("no final answer after 4 turns")
}
