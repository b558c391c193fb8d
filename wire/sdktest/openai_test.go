package sdktest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/llmproxy/llmproxy/wire"
)

func openAIClient(m *mock, retries int) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(m.URL()+"/v1"),
		option.WithAPIKey("sk-test"),
		option.WithMaxRetries(retries),
	)
}

func chatParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Paris?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "weather", Parameters: weatherSchema(),
		})},
	}
}

// extraString reads a string field the SDK does not know.
func extraString(fields map[string]respjson.Field, key string) string {
	f, ok := fields[key]
	if !ok {
		return ""
	}
	var s string
	_ = json.Unmarshal([]byte(f.Raw()), &s)
	return s
}

// chatFinishName is the chat finish_reason of a neutral one.
func chatFinishName(f wire.Finish) string {
	if f == wire.FinishToolCalls {
		return "tool_calls"
	}
	return string(f)
}

func TestOpenAIChat(t *testing.T) {
	ctx := context.Background()
	for _, c := range contents {
		for _, stream := range []bool{false, true} {
			t.Run(c.name+"/"+streamName(stream), func(t *testing.T) {
				m := answering(t, c.a)
				client := openAIClient(m, 0)
				params := chatParams()
				var got seen
				var msg openai.ChatCompletionMessage
				if !stream {
					r, err := client.Chat.Completions.New(ctx, params)
					if err != nil {
						t.Fatalf("chat completion: %v", err)
					}
					msg = r.Choices[0].Message
					got.reasoning = extraString(msg.JSON.ExtraFields, "reasoning_content")
					got.finish = r.Choices[0].FinishReason
					got.input, got.output = int(r.Usage.PromptTokens), int(r.Usage.CompletionTokens)
					got.thoughts = int(r.Usage.CompletionTokensDetails.ReasoningTokens)
					if r.ID != c.a.ID || r.Model != c.a.Model || r.Created != created.Unix() {
						t.Errorf("id %q model %q created %d", r.ID, r.Model, r.Created)
					}
				} else {
					params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
					s := client.Chat.Completions.NewStreaming(ctx, params)
					var acc openai.ChatCompletionAccumulator
					var reasoning strings.Builder
					for s.Next() {
						ch := s.Current()
						if !acc.AddChunk(ch) {
							t.Fatalf("the accumulator rejects chunk %s", ch.RawJSON())
						}
						if len(ch.Choices) > 0 {
							reasoning.WriteString(extraString(ch.Choices[0].Delta.JSON.ExtraFields, "reasoning_content"))
						}
					}
					if err := s.Err(); err != nil {
						t.Fatalf("chat stream: %v", err)
					}
					msg = acc.Choices[0].Message
					got.reasoning = reasoning.String()
					got.finish = acc.Choices[0].FinishReason
					got.input, got.output = int(acc.Usage.PromptTokens), int(acc.Usage.CompletionTokens)
					got.thoughts = int(acc.Usage.CompletionTokensDetails.ReasoningTokens)
				}
				got.text = msg.Content
				for _, tc := range msg.ToolCalls {
					got.calls = append(got.calls, wire.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: []byte(tc.Function.Arguments)})
				}
				check(t, c.a, got, chatFinishName(finishOf(c.a)))
			})
		}
	}
}

func TestOpenAIResponses(t *testing.T) {
	ctx := context.Background()
	for _, c := range contents {
		for _, stream := range []bool{false, true} {
			t.Run(c.name+"/"+streamName(stream), func(t *testing.T) {
				m := answering(t, c.a)
				client := openAIClient(m, 0)
				params := responses.ResponseNewParams{
					Model: "gpt-5.5",
					Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What is the weather in Paris?")},
					Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "weather", Parameters: weatherSchema()}}},
				}
				var r responses.Response
				if !stream {
					p, err := client.Responses.New(ctx, params)
					if err != nil {
						t.Fatalf("response: %v", err)
					}
					r = *p
				} else {
					r = responsesStream(t, client.Responses.NewStreaming(ctx, params))
				}
				got := seen{text: r.OutputText(), finish: string(r.Status),
					input: int(r.Usage.InputTokens), output: int(r.Usage.OutputTokens),
					thoughts: int(r.Usage.OutputTokensDetails.ReasoningTokens)}
				for _, it := range r.Output {
					switch it.Type {
					case "reasoning":
						for _, s := range it.AsReasoning().Summary {
							got.reasoning += s.Text
						}
					case "function_call":
						fc := it.AsFunctionCall()
						got.calls = append(got.calls, wire.ToolCall{ID: fc.CallID, Name: fc.Name, Arguments: []byte(fc.Arguments)})
					}
				}
				if r.ID != c.a.ID || r.Model != c.a.Model || r.CreatedAt != float64(created.Unix()) {
					t.Errorf("id %q model %q created %v", r.ID, r.Model, r.CreatedAt)
				}
				check(t, c.a, got, "completed")
			})
		}
	}
}

// eventStream is what NewStreaming returns, whatever its event type.
type eventStream[T any] interface {
	Next() bool
	Current() T
	Err() error
}

// responsesStream reads a Responses stream: its deltas must add up to what
// response.completed holds, which it returns.
func responsesStream(t *testing.T, s eventStream[responses.ResponseStreamEventUnion]) responses.Response {
	t.Helper()
	var final responses.Response
	var text, reasoning strings.Builder
	args := map[string]*strings.Builder{}
	var seq int64
	for s.Next() {
		ev := s.Current()
		if ev.SequenceNumber != seq {
			t.Errorf("event %s has sequence_number %d, want %d", ev.Type, ev.SequenceNumber, seq)
		}
		seq++
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.reasoning_summary_text.delta":
			reasoning.WriteString(ev.Delta)
		case "response.function_call_arguments.delta":
			if args[ev.ItemID] == nil {
				args[ev.ItemID] = &strings.Builder{}
			}
			args[ev.ItemID].WriteString(ev.Delta)
		case "response.completed", "response.incomplete":
			final = ev.Response
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("response stream: %v", err)
	}
	if final.ID == "" {
		t.Fatalf("no response.completed event")
	}
	if text.String() != final.OutputText() {
		t.Errorf("text deltas %q, completed %q", text.String(), final.OutputText())
	}
	for _, it := range final.Output {
		switch it.Type {
		case "reasoning":
			var sum string
			for _, s := range it.AsReasoning().Summary {
				sum += s.Text
			}
			if reasoning.String() != sum {
				t.Errorf("reasoning deltas %q, completed %q", reasoning.String(), sum)
			}
		case "function_call":
			if a := args[it.ID]; a == nil || a.String() != it.AsFunctionCall().Arguments {
				t.Errorf("argument deltas of %s do not give %s", it.ID, it.AsFunctionCall().Arguments)
			}
		}
	}
	return final
}

func TestOpenAIEmbeddings(t *testing.T) {
	a := wire.Answer{Model: "text-embedding-3-small", Embedding: []float64{0.5, -0.25, 0.125, 3}, Usage: wire.Usage{Input: 4}}
	m := answering(t, a)
	client := openAIClient(m, 0)
	r, err := client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model: "text-embedding-3-small",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("Paris")},
	})
	if err != nil {
		t.Fatalf("embeddings: %v", err)
	}
	if len(r.Data) != 1 || len(r.Data[0].Embedding) != len(a.Embedding) || r.Model != a.Model || r.Usage.PromptTokens != 4 {
		t.Fatalf("embeddings %+v", r)
	}
	for i, v := range r.Data[0].Embedding {
		if v != a.Embedding[i] {
			t.Errorf("embedding[%d] = %v, want %v", i, v, a.Embedding[i])
		}
	}
}

func TestOpenAIErrors(t *testing.T) {
	ctx := context.Background()
	ok := contents[0].a

	t.Run("429 then retry", func(t *testing.T) {
		m := newMock(t,
			step{err: &wire.ErrorAnswer{Status: 429, Message: "Rate limit reached", RetryAfter: 5 * time.Millisecond}},
			step{answer: &ok})
		start := time.Now()
		client := openAIClient(m, 1)
		r, err := client.Chat.Completions.New(ctx, chatParams())
		if err != nil || r.Choices[0].Message.Content != ok.Text {
			t.Fatalf("after a retry: %v", err)
		}
		if len(m.requests()) != 2 || time.Since(start) > 5*time.Second {
			t.Errorf("%d requests in %v: the SDK did not retry after Retry-After-Ms", len(m.requests()), time.Since(start))
		}
	})

	for _, tt := range []struct {
		e         wire.ErrorAnswer
		typ, code string
	}{
		{wire.ErrorAnswer{Status: 429, Message: "Rate limit reached"}, "requests", "rate_limit_exceeded"},
		{wire.ErrorAnswer{Status: 429, Type: "insufficient_quota", Message: "You exceeded your current quota"}, "insufficient_quota", "insufficient_quota"},
		{wire.ErrorAnswer{Status: 500, Message: "The server had an error"}, "server_error", ""},
		{wire.ErrorAnswer{Status: 503}, "server_error", ""},
	} {
		t.Run(tt.typ+"/"+strconv.Itoa(tt.e.Status), func(t *testing.T) {
			m := newMock(t, step{err: &tt.e})
			client := openAIClient(m, 0)
			_, err := client.Chat.Completions.New(ctx, chatParams())
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v, want an *openai.Error", err)
			}
			msg := tt.e.Message
			if msg == "" {
				msg = "Service Unavailable"
			}
			if apiErr.StatusCode != tt.e.Status || apiErr.Type != tt.typ || apiErr.Code != tt.code || apiErr.Message != msg {
				t.Errorf("error %d %q %q %q", apiErr.StatusCode, apiErr.Type, apiErr.Code, apiErr.Message)
			}
		})
	}

	t.Run("chat stream broken by an error chunk", func(t *testing.T) {
		m := newMock(t, step{answer: &ok, cut: 3})
		client := openAIClient(m, 0)
		s := client.Chat.Completions.NewStreaming(ctx, chatParams())
		var acc openai.ChatCompletionAccumulator
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		if err := s.Err(); err == nil || !strings.Contains(err.Error(), "Overloaded") {
			t.Fatalf("stream error %v, want the Overloaded error", err)
		}
		if got := acc.Choices[0].Message.Content; !strings.HasPrefix(ok.Text, got) || got == "" {
			t.Errorf("text before the error %q", got)
		}
	})

	t.Run("responses stream broken by an error event", func(t *testing.T) {
		m := newMock(t, step{answer: &ok, cut: 4})
		client := openAIClient(m, 0)
		s := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{
			Model: "gpt-5.5", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
		})
		var last responses.ResponseStreamEventUnion
		n := 0
		for s.Next() {
			last = s.Current()
			n++
		}
		if err := s.Err(); err != nil {
			t.Fatalf("stream: %v", err)
		}
		if n != 5 || last.Type != "error" || last.Code != "server_error" || last.Message != "Overloaded" || last.SequenceNumber != 4 {
			t.Errorf("%d events, last %s %q %q #%d", n, last.Type, last.Code, last.Message, last.SequenceNumber)
		}
	})
}
