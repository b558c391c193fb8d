package sdktest_test

import (
	"context"
	"errors"
	"io"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/llmproxy/llmproxy/wire"
)

func goOpenAIClient(m *mock) *goopenai.Client {
	cfg := goopenai.DefaultConfig("sk-test")
	cfg.BaseURL = m.URL() + "/v1"
	return goopenai.NewClientWithConfig(cfg)
}

func goOpenAIRequest() goopenai.ChatCompletionRequest {
	return goopenai.ChatCompletionRequest{
		Model:    "gpt-4o-mini",
		Messages: []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: "What is the weather in Paris?"}},
		Tools: []goopenai.Tool{{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{
			Name: "weather", Parameters: weatherSchema(),
		}}},
	}
}

func TestGoOpenAIChat(t *testing.T) {
	ctx := context.Background()
	for _, c := range contents {
		for _, stream := range []bool{false, true} {
			t.Run(c.name+"/"+streamName(stream), func(t *testing.T) {
				client := goOpenAIClient(answering(t, c.a))
				req := goOpenAIRequest()
				var got seen
				if !stream {
					r, err := client.CreateChatCompletion(ctx, req)
					if err != nil {
						t.Fatalf("chat completion: %v", err)
					}
					msg := r.Choices[0].Message
					got.text, got.reasoning, got.finish = msg.Content, msg.ReasoningContent, string(r.Choices[0].FinishReason)
					for _, tc := range msg.ToolCalls {
						got.calls = append(got.calls, wire.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: []byte(tc.Function.Arguments)})
					}
					got.input, got.output = r.Usage.PromptTokens, r.Usage.CompletionTokens
					got.thoughts = r.Usage.CompletionTokensDetails.ReasoningTokens
				} else {
					req.Stream = true
					req.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
					s, err := client.CreateChatCompletionStream(ctx, req)
					if err != nil {
						t.Fatalf("chat stream: %v", err)
					}
					defer s.Close()
					byIndex := map[int]int{}
					for {
						ch, err := s.Recv()
						if errors.Is(err, io.EOF) {
							break
						}
						if err != nil {
							t.Fatalf("chat stream: %v", err)
						}
						if ch.Usage != nil {
							got.input, got.output = ch.Usage.PromptTokens, ch.Usage.CompletionTokens
							got.thoughts = ch.Usage.CompletionTokensDetails.ReasoningTokens
						}
						if len(ch.Choices) == 0 {
							continue
						}
						d := ch.Choices[0].Delta
						got.text += d.Content
						got.reasoning += d.ReasoningContent
						if fr := ch.Choices[0].FinishReason; fr != "" {
							got.finish = string(fr)
						}
						for _, tc := range d.ToolCalls {
							if tc.Index == nil {
								t.Fatalf("tool call delta without index: %+v", tc)
							}
							i, ok := byIndex[*tc.Index]
							if !ok {
								i = len(got.calls)
								byIndex[*tc.Index] = i
								got.calls = append(got.calls, wire.ToolCall{ID: tc.ID, Name: tc.Function.Name})
							}
							got.calls[i].Arguments = append(got.calls[i].Arguments, tc.Function.Arguments...)
						}
					}
				}
				check(t, c.a, got, chatFinishName(finishOf(c.a)))
			})
		}
	}
}

// TestGoOpenAIEmbeddingsBase64 asks for base64 embeddings, which go-openai
// decodes into float32s.
func TestGoOpenAIEmbeddingsBase64(t *testing.T) {
	a := wire.Answer{Model: "text-embedding-3-small", Embedding: []float64{0.5, -0.25, 0.125, 3}, Usage: wire.Usage{Input: 2}}
	client := goOpenAIClient(answering(t, a))
	r, err := client.CreateEmbeddings(context.Background(), goopenai.EmbeddingRequest{
		Input: []string{"Paris"}, Model: goopenai.SmallEmbedding3, EncodingFormat: goopenai.EmbeddingEncodingFormatBase64,
	})
	if err != nil {
		t.Fatalf("embeddings: %v", err)
	}
	if len(r.Data) != 1 || len(r.Data[0].Embedding) != len(a.Embedding) || r.Usage.PromptTokens != 2 {
		t.Fatalf("embeddings %+v", r)
	}
	for i, v := range r.Data[0].Embedding {
		if float64(v) != a.Embedding[i] {
			t.Errorf("embedding[%d] = %v, want %v", i, v, a.Embedding[i])
		}
	}
}

func TestGoOpenAIError(t *testing.T) {
	m := newMock(t, step{err: &wire.ErrorAnswer{Status: 500, Message: "The server had an error"}})
	_, err := goOpenAIClient(m).CreateChatCompletion(context.Background(), goOpenAIRequest())
	var apiErr *goopenai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 500 || apiErr.Type != "server_error" || apiErr.Message != "The server had an error" {
		t.Fatalf("err = %#v, want a 500 server_error", err)
	}
}
