package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
)

const testKey = "sk-test-LLMPROXY-SECRET-4242"

var weatherLoop = fake.ToolLoop{
	Tool:   "weather",
	Args:   `{"location":"Paris","unit":"celsius"}`,
	CallID: "call_paris",
	Answer: "It is 21 °C and sunny in Paris.",
}

const weatherResult = `{"location":"Paris","temperature":21,"unit":"celsius","condition":"sunny"}`

// transcript is what an SDK made of a tool loop, for comparing record and replay.
type transcript struct {
	calls  []string
	answer string
}

func (tr transcript) String() string { return fmt.Sprintf("calls=%v answer=%q", tr.calls, tr.answer) }

func weatherTool() openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
		Name: "weather",
		Parameters: openai.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{"location": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string"}},
			"required":   []string{"location"},
		},
	})
}

// openaiGoLoop runs a two-turn tool loop with openai-go against baseURL.
func openaiGoLoop(ctx context.Context, hc *http.Client, baseURL, prompt string, stream bool) (transcript, error) {
	client := openai.NewClient(option.WithBaseURL(baseURL+"/v1/"), option.WithAPIKey(testKey), option.WithHTTPClient(hc), option.WithMaxRetries(0))
	return openaiChatTurns(ctx, client, prompt, stream, func(args string) string { return args })
}

// openaiChatTurns runs the two-turn weather tool loop with an openai-go
// client; fmtArgs renders a call's arguments into the transcript.
func openaiChatTurns(ctx context.Context, client openai.Client, prompt string, stream bool, fmtArgs func(string) string) (transcript, error) {
	turns, err := openaiChatLoop(ctx, client, openai.ChatModelGPT4oMini, prompt, stream, fmtArgs)
	var tr transcript
	for _, t := range turns {
		tr.calls = append(tr.calls, t.calls...)
		if len(t.calls) == 0 {
			tr.answer = t.content
		}
	}
	return tr, err
}

// chatTurn is what the application saw of one chat completion.
type chatTurn struct {
	id, model, finish string
	usage             int64
	calls             []string
	content           string
}

// openaiChatLoop runs the weather tool loop with an openai-go client and
// model: the tool call, then the answer once the tool result is sent. It
// returns each turn as the application saw it; fmtArgs renders a call's
// arguments.
func openaiChatLoop(ctx context.Context, client openai.Client, model, prompt string, stream bool, fmtArgs func(string) string) ([]chatTurn, error) {
	params := openai.ChatCompletionNewParams{
		Model:    model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		Tools:    []openai.ChatCompletionToolUnionParam{weatherTool()},
	}
	if stream {
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}
	var turns []chatTurn
	for turn := 0; turn < 2; turn++ {
		var cc openai.ChatCompletion
		if stream {
			s := client.Chat.Completions.NewStreaming(ctx, params)
			var acc openai.ChatCompletionAccumulator
			for s.Next() {
				if !acc.AddChunk(s.Current()) {
					s.Close()
					return turns, fmt.Errorf("chunk %q does not continue the stream", s.Current().RawJSON())
				}
			}
			if err := s.Err(); err != nil {
				return turns, err
			}
			cc = acc.ChatCompletion
		} else {
			resp, err := client.Chat.Completions.New(ctx, params)
			if err != nil {
				return turns, err
			}
			cc = *resp
		}
		if len(cc.Choices) == 0 {
			return turns, fmt.Errorf("completion without choices")
		}
		msg := cc.Choices[0].Message
		t := chatTurn{id: cc.ID, model: cc.Model, finish: cc.Choices[0].FinishReason, usage: cc.Usage.TotalTokens, content: msg.Content}
		for _, tc := range msg.ToolCalls {
			t.calls = append(t.calls, tc.ID+" "+tc.Function.Name+fmtArgs(tc.Function.Arguments))
		}
		turns = append(turns, t)
		if len(msg.ToolCalls) == 0 {
			return turns, nil
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			params.Messages = append(params.Messages, openai.ToolMessage(weatherResult, tc.ID))
		}
	}
	return turns, fmt.Errorf("no answer after two turns")
}

// goOpenAILoop runs the same loop with sashabaranov/go-openai.
func goOpenAILoop(ctx context.Context, hc *http.Client, baseURL, prompt string, stream bool) (transcript, error) {
	cfg := goopenai.DefaultConfig(testKey)
	cfg.BaseURL = baseURL + "/v1"
	cfg.HTTPClient = hc
	client := goopenai.NewClientWithConfig(cfg)
	req := goopenai.ChatCompletionRequest{
		Model:    "gpt-4o-mini",
		Messages: []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: prompt}},
		Tools: []goopenai.Tool{{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{
			Name:       "weather",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}}},
		}}},
	}
	var tr transcript
	for turn := 0; turn < 2; turn++ {
		var msg goopenai.ChatCompletionMessage
		if stream {
			req.Stream = true
			req.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
			s, err := client.CreateChatCompletionStream(ctx, req)
			if err != nil {
				return tr, err
			}
			msg.Role = goopenai.ChatMessageRoleAssistant
			var content strings.Builder
			calls := map[int]*goopenai.ToolCall{}
			for {
				chunk, err := s.Recv()
				if err != nil {
					if err.Error() == "EOF" {
						break
					}
					s.Close()
					return tr, err
				}
				for _, ch := range chunk.Choices {
					content.WriteString(ch.Delta.Content)
					for _, d := range ch.Delta.ToolCalls {
						idx := 0
						if d.Index != nil {
							idx = *d.Index
						}
						c, ok := calls[idx]
						if !ok {
							c = &goopenai.ToolCall{Type: goopenai.ToolTypeFunction}
							calls[idx] = c
						}
						if d.ID != "" {
							c.ID = d.ID
						}
						c.Function.Name += d.Function.Name
						c.Function.Arguments += d.Function.Arguments
					}
				}
			}
			s.Close()
			msg.Content = content.String()
			for i := 0; i < len(calls); i++ {
				msg.ToolCalls = append(msg.ToolCalls, *calls[i])
			}
		} else {
			resp, err := client.CreateChatCompletion(ctx, req)
			if err != nil {
				return tr, err
			}
			msg = resp.Choices[0].Message
		}
		if len(msg.ToolCalls) == 0 {
			tr.answer = msg.Content
			return tr, nil
		}
		req.Messages = append(req.Messages, msg)
		for _, tc := range msg.ToolCalls {
			tr.calls = append(tr.calls, tc.ID+" "+tc.Function.Name+tc.Function.Arguments)
			req.Messages = append(req.Messages, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleTool, ToolCallID: tc.ID, Content: weatherResult})
		}
	}
	return tr, fmt.Errorf("no answer after two turns")
}

type sdkLoop func(ctx context.Context, hc *http.Client, baseURL, prompt string, stream bool) (transcript, error)

func TestOpenAIChatRecordReplay(t *testing.T) {
	for _, sdk := range []struct {
		name string
		loop sdkLoop
	}{{"openai-go", openaiGoLoop}, {"go-openai", goOpenAILoop}} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", sdk.name, stream), func(t *testing.T) {
				ctx := context.Background()
				up := fake.New(t, fake.OpenAIChat(weatherLoop), fake.RequireHeader("Authorization", "Bearer "+testKey))
				path := cassettePath(t)

				rec := startProxy(t, proxy.ModeRecord, path, up.URL())
				want, err := sdk.loop(ctx, rec.client(), rec.URL(), "What's the weather in Paris?", stream)
				if err != nil {
					t.Fatalf("record: %v", err)
				}
				if len(want.calls) != 1 || !strings.Contains(want.answer, "Paris") {
					t.Fatalf("recorded transcript %v is not a tool loop", want)
				}
				recorded := rec.bodies()
				rec.stop()
				hits := up.Hits()
				if hits != 2 {
					t.Fatalf("upstream hits while recording = %d, want 2", hits)
				}
				if raw := rawCassette(t, path); bytes.Contains(raw, []byte(testKey)) {
					t.Fatal("the API key is in the cassette file")
				}
				up.Close()

				rep := startProxy(t, proxy.ModeReplay, path, up.URL())
				got, err := sdk.loop(ctx, rep.client(), rep.URL(), "What's the weather in Paris?", stream)
				if err != nil {
					var apiErr *openai.Error
					if asOpenAIError(err, &apiErr) {
						t.Fatalf("replay: %v: %s", err, apiErr.Message)
					}
					t.Fatalf("replay: %v", err)
				}
				if got.String() != want.String() {
					t.Errorf("replay transcript = %v, want %v", got, want)
				}
				if up.Hits() != hits {
					t.Errorf("upstream hits during replay = %d", up.Hits()-hits)
				}
				replayed := rep.bodies()
				if len(replayed) != len(recorded) {
					t.Fatalf("replay delivered %d bodies, record %d", len(replayed), len(recorded))
				}
				for i := range recorded {
					if !bytes.Equal(recorded[i], replayed[i]) {
						t.Errorf("response %d differs between record and replay:\nrecord: %q\nreplay: %q", i, recorded[i], replayed[i])
					}
				}
			})
		}
	}
}

func TestMissSurfacesInSDKAndProxyKeepsServing(t *testing.T) {
	ctx := context.Background()
	up := fake.New(t, fake.OpenAIChat(weatherLoop))
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.URL())
	if _, err := openaiGoLoop(ctx, rec.client(), rec.URL(), "What's the weather in Paris?", false); err != nil {
		t.Fatal(err)
	}
	rec.stop()

	rep := startProxy(t, proxy.ModeReplay, path, "")
	_, err := openaiGoLoop(ctx, rep.client(), rep.URL(), "What's the weather in Rome?", false)
	if err == nil {
		t.Fatal("a changed prompt replayed without error")
	}
	var apiErr *openai.Error
	if !asOpenAIError(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Fatalf("SDK error is not a 400 openai.Error: %T %v", err, err)
	}
	// openai-go keeps the provider message out of Error(); it is in the fields.
	msg := fmt.Sprintf("%d %s %s", apiErr.StatusCode, apiErr.Type, apiErr.Message)
	for _, want := range []string{"400", "cassette_miss", path, "interaction 1", "messages.0.content", "Rome", "Paris"} {
		if !strings.Contains(msg, want) {
			t.Errorf("SDK error %q does not mention %q", msg, want)
		}
	}
	// The miss changed nothing: the recorded conversation still replays.
	if _, err := openaiGoLoop(ctx, rep.client(), rep.URL(), "What's the weather in Paris?", false); err != nil {
		t.Errorf("after a miss, the recorded conversation fails: %v", err)
	}
}
