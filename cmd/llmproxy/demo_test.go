package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/fixture"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/wire"
)

var updateDemo = flag.Bool("update-demo", false, "re-record cassettes/demo.cassette against the fake OpenAI upstream")

// demoLoop is the conversation the demo cassette holds. The call id is the
// kind OpenAI gives; scrub turns it into call_weather.
var demoLoop = fake.ToolLoop{
	Tool:   "weather",
	Args:   `{"location":"Paris","unit":"celsius"}`,
	CallID: "call_Wm4tXq7bR2vYp9Lk3sHd8JfN",
	Answer: "It is 21 °C and sunny in Paris.",
}

// weatherService stands for the real weather service the demo application
// called when its cassette was recorded.
type weatherService struct{}

func (weatherService) Execute(_ context.Context, call wire.ToolCall) (wire.ToolResult, error) {
	out := `{"location":"Paris","temperature":21,"unit":"celsius","condition":"sunny"}`
	return wire.ToolResult{CallID: call.ID, Name: call.Name, Content: []byte(out)}, nil
}

// TestDemo runs `llmproxy demo` on the committed cassette and compares its
// output with testdata/demo.golden.
func TestDemo(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"demo"}, &out, &errb); code != 0 {
		t.Fatalf("llmproxy demo exited %d: %s", code, errb.String())
	}
	got := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).ReplaceAll(out.Bytes(), []byte("http://127.0.0.1:PORT"))
	golden(t, "demo.golden", got)
}

// TestGenerateDemoCassette records the demo cassette: the demo's tool round
// run by the official openai-go client (sdkConversation) through a recording
// proxy, against the fake OpenAI upstream that sends captured OpenAI bytes;
// then scrubs it, so that the weather call becomes call_weather with its
// fixture stored. Run with -update-demo.
func TestGenerateDemoCassette(t *testing.T) {
	if !*updateDemo {
		t.Skip("run with -update-demo to re-record cassettes/demo.cassette")
	}
	up := fake.New(t, fake.OpenAIChat(demoLoop))
	path := filepath.Join(t.TempDir(), "demo.cassette")
	c, err := cassette.Open(path, cassette.Options{Version: version})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(up.URL())
	p, err := proxy.New(proxy.Config{Mode: proxy.ModeRecord, Cassette: c, Default: u, Upstreams: map[string]*url.URL{"openai": u}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	if err := sdkConversation(context.Background(), srv.URL+"/v1/", io.Discard, weatherService{}); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	c.Close()
	if up.Hits() != 2 {
		t.Fatalf("upstream hits = %d, want 2", up.Hits())
	}
	if code, out, errs := runCLI(t, "scrub", "--cassette", path); code != 0 || !strings.Contains(out, "1 tool call(s) substituted, 0 left unchanged") {
		t.Fatalf("scrub exited %d: %s%s", code, out, errs)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("../../cassettes/demo.cassette", data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDemoCassetteServesTheSDK replays the demo cassette to the official
// openai-go client running the same tool round as the demo application: the
// demo's plain HTTP client and the SDK send requests the cassette matches,
// and the SDK reads the same conversation from it.
func TestDemoCassetteServesTheSDK(t *testing.T) {
	var plain, sdk bytes.Buffer
	url, weather := replayDemo(t)
	if err := demoConversation(context.Background(), url, &plain, weather); err != nil {
		t.Fatalf("demo application: %v", err)
	}
	url, weather = replayDemo(t)
	if err := sdkConversation(context.Background(), url, &sdk, weather); err != nil {
		t.Fatalf("openai-go: %v", err)
	}
	if plain.String() != sdk.String() {
		t.Errorf("the SDK read another conversation:\n--- openai-go\n%s--- demo\n%s", sdk.String(), plain.String())
	}
	if !strings.Contains(sdk.String(), demoLoop.Answer) {
		t.Errorf("the SDK's conversation lacks the answer %q:\n%s", demoLoop.Answer, sdk.String())
	}
}

// replayDemo serves a copy of the demo cassette from a replaying proxy and
// returns its OpenAI base URL and the weather tool answering from the
// cassette's fixtures.
func replayDemo(t *testing.T) (string, demoTool) {
	t.Helper()
	path := demoCopy(t)
	weather, err := fixture.NewCassetteExecutor(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, err := proxy.New(proxy.Config{Mode: proxy.ModeReplay, Cassette: c, Transport: noNetwork{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1/", weather
}

// sdkConversation is demoConversation written with openai-go: the tool round
// an application using the official SDK runs.
func sdkConversation(ctx context.Context, baseURL string, w io.Writer, weather demoTool) error {
	client := openai.NewClient(option.WithBaseURL(baseURL), option.WithAPIKey("sk-demo-not-a-real-key"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{
		Model:    openai.ChatModelGPT4oMini,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(demoQuestion)},
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

// TestDemoReportsAMiss: when the proxy refuses a request, the demo's error
// carries the proxy's message, not only the status.
func TestDemoReportsAMiss(t *testing.T) {
	url, weather := replayDemo(t)
	var out bytes.Buffer
	// The first conversation uses every recording; the second one's first
	// turn is then a miss.
	if err := demoConversation(context.Background(), url, &out, weather); err != nil {
		t.Fatal(err)
	}
	err := demoConversation(context.Background(), url, &out, weather)
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "already served") {
		t.Errorf("demo against an exhausted cassette: %v; want the proxy's 400 and its message", err)
	}
}
