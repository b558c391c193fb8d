package fake_test

// These tests point the official SDKs straight at the fakes: if an SDK parses
// the tool call and the final text, streamed and not, the fakes speak the
// provider's protocol well enough for the real clients the proxy will carry.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"google.golang.org/genai"

	"github.com/llmproxy/llmproxy/internal/fake"
)

// wantArgs fails the test unless args decodes to the loop's arguments.
func wantArgs(t *testing.T, args string) {
	t.Helper()
	var got, want map[string]any
	if err := json.Unmarshal([]byte(args), &got); err != nil {
		t.Fatalf("arguments %q: %v", args, err)
	}
	_ = json.Unmarshal([]byte(paris.Args), &want)
	if got["location"] != want["location"] || got["unit"] != want["unit"] || len(got) != len(want) {
		t.Errorf("arguments %v, want %v", got, want)
	}
}

func weatherSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"location": map[string]any{"type": "string"},
			"unit":     map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
		},
		"required": []string{"location"},
	}
}

func openAIClient(t *testing.T, script fake.Script) (openai.Client, *fake.Upstream) {
	u := fake.New(t, script, fake.RequireHeader("Authorization", "Bearer sk-test-123"))
	c := openai.NewClient(
		openaioption.WithBaseURL(u.URL()+"/v1"),
		openaioption.WithAPIKey("sk-test-123"),
		openaioption.WithMaxRetries(0),
	)
	return c, u
}

func TestSDKOpenAIChat(t *testing.T) {
	ctx := context.Background()
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			client, u := openAIClient(t, fake.OpenAIChat(paris))
			params := openai.ChatCompletionNewParams{
				Model:    "gpt-4o-mini",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Paris?")},
				Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
					Name:       "weather",
					Parameters: weatherSchema(),
				})},
			}
			complete := func() openai.ChatCompletionMessage {
				t.Helper()
				if !stream {
					c, err := client.Chat.Completions.New(ctx, params)
					if err != nil {
						t.Fatalf("chat completion: %v", err)
					}
					return c.Choices[0].Message
				}
				params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				s := client.Chat.Completions.NewStreaming(ctx, params)
				var acc openai.ChatCompletionAccumulator
				for s.Next() {
					if !acc.AddChunk(s.Current()) {
						t.Fatalf("accumulator rejected chunk %s", s.Current().RawJSON())
					}
				}
				if err := s.Err(); err != nil {
					t.Fatalf("chat stream: %v", err)
				}
				if acc.Usage.TotalTokens == 0 {
					t.Errorf("no usage accumulated")
				}
				return acc.Choices[0].Message
			}

			msg := complete()
			if len(msg.ToolCalls) != 1 {
				t.Fatalf("%d tool calls, want 1", len(msg.ToolCalls))
			}
			call := msg.ToolCalls[0]
			if call.ID != paris.CallID || call.Function.Name != paris.Tool {
				t.Errorf("tool call %s %s, want %s %s", call.ID, call.Function.Name, paris.CallID, paris.Tool)
			}
			wantArgs(t, call.Function.Arguments)

			params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage(`{"temperature":21}`, call.ID))
			if msg = complete(); msg.Content != paris.Answer || len(msg.ToolCalls) != 0 {
				t.Errorf("answer %q with %d tool calls, want %q", msg.Content, len(msg.ToolCalls), paris.Answer)
			}
			if u.Hits() != 2 {
				t.Errorf("upstream hit %d times, want 2", u.Hits())
			}
		})
	}
}

func TestSDKOpenAIWrongKey(t *testing.T) {
	u := fake.New(t, fake.OpenAIChat(paris), fake.RequireHeader("Authorization", "Bearer sk-test-123"))
	client := openai.NewClient(openaioption.WithBaseURL(u.URL()+"/v1"), openaioption.WithAPIKey("sk-wrong"), openaioption.WithMaxRetries(0))
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Code != "invalid_api_key" {
		t.Fatalf("err = %v, want a 401 invalid_api_key API error", err)
	}
}

func TestSDKOpenAIResponses(t *testing.T) {
	ctx := context.Background()
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			client, u := openAIClient(t, fake.OpenAIResponses(paris))
			params := responses.ResponseNewParams{
				Model: "gpt-5.5",
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What is the weather in Paris?")},
				Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{
					Name:       "weather",
					Parameters: weatherSchema(),
				}}},
			}
			create := func() responses.Response {
				t.Helper()
				if !stream {
					r, err := client.Responses.New(ctx, params)
					if err != nil {
						t.Fatalf("response: %v", err)
					}
					return *r
				}
				s := client.Responses.NewStreaming(ctx, params)
				var final responses.Response
				var deltas strings.Builder
				for s.Next() {
					ev := s.Current()
					switch ev.Type {
					case "response.output_text.delta", "response.function_call_arguments.delta":
						deltas.WriteString(ev.Delta)
					case "response.completed":
						final = ev.Response
					}
				}
				if err := s.Err(); err != nil {
					t.Fatalf("response stream: %v", err)
				}
				if final.ID == "" {
					t.Fatalf("no response.completed event")
				}
				if want := final.OutputText(); want != "" && deltas.String() != want {
					t.Errorf("deltas %q, completed text %q", deltas.String(), want)
				}
				return final
			}

			r := create()
			if len(r.Output) != 1 || r.Output[0].Type != "function_call" {
				t.Fatalf("output %+v, want one function_call", r.Output)
			}
			fc := r.Output[0].AsFunctionCall()
			if fc.CallID != paris.CallID || fc.Name != paris.Tool {
				t.Errorf("function call %s %s", fc.CallID, fc.Name)
			}
			wantArgs(t, fc.Arguments)

			params.PreviousResponseID = openai.String(r.ID)
			params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: []responses.ResponseInputItemUnionParam{{
				OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
					CallID: openai.String(fc.CallID),
					Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(`{"temperature":21}`)},
				},
			}}}
			if r = create(); r.OutputText() != paris.Answer {
				t.Errorf("answer %q, want %q", r.OutputText(), paris.Answer)
			}
			if u.Hits() != 2 {
				t.Errorf("upstream hit %d times, want 2", u.Hits())
			}
		})
	}
}

func TestSDKAnthropic(t *testing.T) {
	ctx := context.Background()
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			// anthropic-sdk-go v2 sends WithAPIKey as a bearer token.
			u := fake.New(t, fake.AnthropicMessages(paris), fake.RequireHeader("Authorization", "Bearer sk-ant-test"))
			client := anthropic.NewClient(
				anthropicoption.WithBaseURL(u.URL()),
				anthropicoption.WithAPIKey("sk-ant-test"),
				anthropicoption.WithMaxRetries(0),
			)
			params := anthropic.MessageNewParams{
				Model:     "claude-sonnet-4-6",
				MaxTokens: 1024,
				Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is the weather in Paris?"))},
				Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
					Name:        "weather",
					InputSchema: anthropic.ToolInputSchemaParam{Properties: weatherSchema()["properties"]},
				}}},
			}
			create := func() anthropic.Message {
				t.Helper()
				if !stream {
					m, err := client.Messages.New(ctx, params)
					if err != nil {
						t.Fatalf("message: %v", err)
					}
					return *m
				}
				s := client.Messages.NewStreaming(ctx, params)
				var acc anthropic.Message
				for s.Next() {
					if err := acc.Accumulate(s.Current()); err != nil {
						t.Fatalf("accumulate: %v", err)
					}
				}
				if err := s.Err(); err != nil {
					t.Fatalf("message stream: %v", err)
				}
				return acc
			}

			m := create()
			if m.StopReason != anthropic.StopReasonToolUse || len(m.Content) != 1 || m.Content[0].Type != "tool_use" {
				t.Fatalf("stop %q content %+v, want one tool_use", m.StopReason, m.Content)
			}
			tu := m.Content[0].AsToolUse()
			if tu.ID != paris.CallID || tu.Name != paris.Tool {
				t.Errorf("tool_use %s %s", tu.ID, tu.Name)
			}
			wantArgs(t, string(tu.Input))

			params.Messages = append(params.Messages, m.ToParam(),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock(tu.ID, `{"temperature":21}`, false)))
			m = create()
			if m.StopReason != anthropic.StopReasonEndTurn || len(m.Content) != 1 || m.Content[0].Text != paris.Answer {
				t.Errorf("stop %q content %+v, want the answer", m.StopReason, m.Content)
			}
			if u.Hits() != 2 {
				t.Errorf("upstream hit %d times, want 2", u.Hits())
			}
		})
	}
}

func TestSDKGemini(t *testing.T) {
	ctx := context.Background()
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			u := fake.New(t, fake.Gemini(paris), fake.RequireHeader("X-Goog-Api-Key", "g-key"))
			client, err := genai.NewClient(ctx, &genai.ClientConfig{
				APIKey:      "g-key",
				Backend:     genai.BackendGeminiAPI,
				HTTPOptions: genai.HTTPOptions{BaseURL: u.URL()},
			})
			if err != nil {
				t.Fatal(err)
			}
			config := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
				Name:                 "weather",
				ParametersJsonSchema: weatherSchema(),
			}}}}}
			contents := []*genai.Content{genai.NewContentFromText("What is the weather in Paris?", genai.RoleUser)}
			generate := func() (calls []*genai.FunctionCall, text string, last *genai.Content) {
				t.Helper()
				if !stream {
					r, err := client.Models.GenerateContent(ctx, "gemini-2.5-flash", contents, config)
					if err != nil {
						t.Fatalf("generateContent: %v", err)
					}
					if calls = r.FunctionCalls(); len(calls) == 0 {
						text = r.Text() // Text() warns about function call parts
					}
					return calls, text, r.Candidates[0].Content
				}
				var parts []*genai.Part
				for r, err := range client.Models.GenerateContentStream(ctx, "gemini-2.5-flash", contents, config) {
					if err != nil {
						t.Fatalf("streamGenerateContent: %v", err)
					}
					if fc := r.FunctionCalls(); len(fc) > 0 {
						calls = append(calls, fc...)
					} else {
						text += r.Text()
					}
					parts = append(parts, r.Candidates[0].Content.Parts...)
				}
				return calls, text, genai.NewContentFromParts(parts, genai.RoleModel)
			}

			calls, _, model := generate()
			if len(calls) != 1 || calls[0].Name != paris.Tool {
				t.Fatalf("function calls %+v, want one %s", calls, paris.Tool)
			}
			if calls[0].Args["location"] != "Paris" || calls[0].Args["unit"] != "celsius" {
				t.Errorf("args %v", calls[0].Args)
			}
			if len(model.Parts[0].ThoughtSignature) == 0 {
				t.Errorf("no thoughtSignature decoded beside the functionCall")
			}

			contents = append(contents, model,
				genai.NewContentFromFunctionResponse("weather", map[string]any{"temperature": 21}, genai.RoleUser))
			calls, text, _ := generate()
			if len(calls) != 0 || text != paris.Answer {
				t.Errorf("answer %q with %d calls, want %q", text, len(calls), paris.Answer)
			}
			reqs := u.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			for _, r := range reqs {
				if !strings.HasPrefix(r.Path, "/v1beta/models/gemini-2.5-flash:") {
					t.Errorf("SDK called %s", r.Path)
				}
			}
		})
	}
}
