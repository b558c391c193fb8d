package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/cassettes"
	"github.com/llmproxy/llmproxy/fixture"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/wire"
)

// demoQuestion is the user turn of the demo conversation.
const demoQuestion = "What's the weather in Paris?"

// runDemo replays the bundled demo cassette through an in-process proxy on a
// free port and the demo application (an OpenAI chat client over plain
// HTTP), and prints the conversation.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", stdout)
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

// The demo application's request, as an OpenAI chat client writes it. The
// field order is the one the cassette was recorded with.
type (
	chatRequest struct {
		Messages      []chatMessage `json:"messages"`
		Model         string        `json:"model"`
		StreamOptions streamOptions `json:"stream_options"`
		Tools         []chatTool    `json:"tools"`
		Stream        bool          `json:"stream"`
	}
	chatMessage struct {
		Content    string         `json:"content,omitempty"`
		ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
		ToolCallID string         `json:"tool_call_id,omitempty"`
		Role       string         `json:"role"`
	}
	chatToolCall struct {
		ID       string       `json:"id"`
		Function chatFunction `json:"function"`
		Type     string       `json:"type"`
	}
	chatFunction struct {
		Arguments string `json:"arguments"`
		Name      string `json:"name"`
	}
	chatTool struct {
		Function toolDefinition `json:"function"`
		Type     string         `json:"type"`
	}
	toolDefinition struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	streamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
)

// weatherParameters is the JSON schema of the weather tool's arguments.
const weatherParameters = `{"additionalProperties":false,"properties":{"location":{"type":"string"},"unit":{"enum":["celsius","fahrenheit"],"type":"string"}},"required":["location"],"type":"object"}`

// maxDemoResponse bounds what the demo reads of one answer.
const maxDemoResponse = 1 << 20

// demoConversation is the demo application: a streamed tool loop with a
// weather tool over plain HTTP, printed as it goes. The same code recorded
// the cassette.
func demoConversation(ctx context.Context, baseURL string, w io.Writer, weather demoTool) error {
	req := chatRequest{
		Messages:      []chatMessage{{Role: "user", Content: demoQuestion}},
		Model:         "gpt-4o-mini",
		StreamOptions: streamOptions{IncludeUsage: true},
		Tools: []chatTool{{Type: "function", Function: toolDefinition{
			Name:        "weather",
			Description: "Current weather for a location.",
			Parameters:  json.RawMessage(weatherParameters),
		}}},
		Stream: true,
	}
	fmt.Fprintf(w, "user: %s\n", demoQuestion)
	for turn := 0; turn < 4; turn++ {
		answer, err := demoTurn(ctx, baseURL+"chat/completions", req)
		if err != nil {
			return fmt.Errorf("turn %d: %w", turn+1, err)
		}
		if len(answer.ToolCalls) == 0 {
			fmt.Fprintf(w, "assistant: %s\n", answer.Text)
			return nil
		}
		echo := chatMessage{Role: "assistant", Content: answer.Text}
		var results []chatMessage
		for _, tc := range answer.ToolCalls {
			fmt.Fprintf(w, "assistant calls %s(%s) [%s]\n", tc.Name, tc.Arguments, tc.ID)
			if tc.Name != "weather" {
				return fmt.Errorf("unexpected tool %q", tc.Name)
			}
			echo.ToolCalls = append(echo.ToolCalls, chatToolCall{ID: tc.ID, Type: "function", Function: chatFunction{Name: tc.Name, Arguments: string(tc.Arguments)}})
			result, err := weather.Execute(ctx, wire.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "tool %s → %s\n", tc.Name, result.Content)
			results = append(results, chatMessage{Role: "tool", Content: string(result.Content), ToolCallID: tc.ID})
		}
		req.Messages = append(append(req.Messages, echo), results...)
	}
	return errors.New("no final answer after 4 turns")
}

// demoTurn sends one chat request and reads its streamed answer with wire's
// reader. An error status is returned with the message the proxy sent (for
// a miss, why the request matched no recording).
func demoTurn(ctx context.Context, url string, req chatRequest) (wire.Response, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return wire.Response{}, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return wire.Response{}, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return wire.Response{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxDemoResponse+1))
	if err != nil {
		return wire.Response{}, fmt.Errorf("POST %s: reading the answer: %w", url, err)
	}
	if len(data) > maxDemoResponse {
		return wire.Response{}, fmt.Errorf("POST %s: answer larger than %d bytes", url, maxDemoResponse)
	}
	answer, err := wire.ParseResponse(wire.KindOpenAIChat, wire.DetectFraming(resp.Header.Get("Content-Type")), data)
	if resp.StatusCode != http.StatusOK {
		if answer.Error != "" {
			return wire.Response{}, fmt.Errorf("POST %s: %s: %s", url, resp.Status, answer.Error)
		}
		return wire.Response{}, fmt.Errorf("POST %s: %s", url, resp.Status)
	}
	if err != nil {
		return wire.Response{}, fmt.Errorf("POST %s: %w", url, err)
	}
	if answer.Error != "" {
		return wire.Response{}, fmt.Errorf("POST %s: the model sent an error: %s", url, answer.Error)
	}
	return answer, nil
}
