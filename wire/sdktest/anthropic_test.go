package sdktest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/llmproxy/llmproxy/wire"
)

func anthropicClient(m *mock, retries int) anthropic.Client {
	return anthropic.NewClient(
		option.WithBaseURL(m.URL()),
		option.WithAPIKey("sk-ant-test"),
		option.WithMaxRetries(retries),
	)
}

func anthropicParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-6",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is the weather in Paris?"))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name: "weather", InputSchema: anthropic.ToolInputSchemaParam{Properties: weatherSchema()["properties"]},
		}}},
	}
}

// anthropicStopName is the stop_reason of a neutral finish reason.
func anthropicStopName(f wire.Finish) string {
	return map[wire.Finish]string{wire.FinishStop: "end_turn", wire.FinishLength: "max_tokens", wire.FinishToolCalls: "tool_use"}[f]
}

func TestAnthropicMessages(t *testing.T) {
	ctx := context.Background()
	for _, c := range contents {
		for _, stream := range []bool{false, true} {
			t.Run(c.name+"/"+streamName(stream), func(t *testing.T) {
				client := anthropicClient(answering(t, c.a), 0)
				var msg anthropic.Message
				if !stream {
					p, err := client.Messages.New(ctx, anthropicParams())
					if err != nil {
						t.Fatalf("message: %v", err)
					}
					msg = *p
				} else {
					s := client.Messages.NewStreaming(ctx, anthropicParams())
					for s.Next() {
						if err := msg.Accumulate(s.Current()); err != nil {
							t.Fatalf("accumulate: %v", err)
						}
					}
					if err := s.Err(); err != nil {
						t.Fatalf("message stream: %v", err)
					}
				}
				got := seen{finish: string(msg.StopReason), input: int(msg.Usage.InputTokens), output: int(msg.Usage.OutputTokens), thoughts: -1}
				for _, b := range msg.Content {
					switch b.Type {
					case "thinking":
						got.reasoning += b.Thinking
						if b.Signature == "" {
							t.Errorf("thinking block without a signature")
						}
					case "text":
						got.text += b.Text
					case "tool_use":
						got.calls = append(got.calls, wire.ToolCall{ID: b.ID, Name: b.Name, Arguments: []byte(b.Input)})
					}
				}
				if msg.ID != c.a.ID || string(msg.Model) != c.a.Model {
					t.Errorf("id %q model %q", msg.ID, msg.Model)
				}
				check(t, c.a, got, anthropicStopName(finishOf(c.a)))
			})
		}
	}
}

func TestAnthropicErrors(t *testing.T) {
	ctx := context.Background()
	ok := contents[0].a

	t.Run("529 overloaded", func(t *testing.T) {
		m := newMock(t, step{err: &wire.ErrorAnswer{Status: 529}})
		client := anthropicClient(m, 0)
		_, err := client.Messages.New(ctx, anthropicParams())
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || apiErr.Type() != "overloaded_error" || apiErr.Message != "Overloaded" {
			t.Fatalf("err = %v, want a 529 overloaded_error", err)
		}
	})

	t.Run("429 then retry", func(t *testing.T) {
		m := newMock(t,
			step{err: &wire.ErrorAnswer{Status: 429, Message: "Number of requests has exceeded your rate limit", RetryAfter: 5 * time.Millisecond}},
			step{answer: &ok})
		client := anthropicClient(m, 1)
		msg, err := client.Messages.New(ctx, anthropicParams())
		if err != nil || msg.Content[0].Text != ok.Text || len(m.requests()) != 2 {
			t.Fatalf("after a retry: %v, %d requests", err, len(m.requests()))
		}
	})

	t.Run("stream broken by an error event", func(t *testing.T) {
		m := newMock(t, step{answer: &ok, cut: 4})
		client := anthropicClient(m, 0)
		s := client.Messages.NewStreaming(ctx, anthropicParams())
		var msg anthropic.Message
		for s.Next() {
			_ = msg.Accumulate(s.Current())
		}
		err := s.Err()
		if err == nil || !strings.Contains(err.Error(), "overloaded_error") {
			t.Fatalf("stream error %v, want overloaded_error", err)
		}
		if len(msg.Content) != 1 || !strings.HasPrefix(ok.Text, msg.Content[0].Text) || msg.Content[0].Text == "" {
			t.Errorf("content before the error %+v", msg.Content)
		}
	})
}
