package fake_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/internal/fake"
)

// A streamed Chat Completions call against the fake: the first turn is the
// tool call, its arguments arriving in fragments.
func ExampleOpenAIChat() {
	u := fake.Start(fake.OpenAIChat(fake.ToolLoop{
		Tool:   "weather",
		Args:   `{"location":"Paris"}`,
		Answer: "Sunny.",
	}))
	defer u.Close()

	resp, err := http.Post(u.URL()+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Weather in Paris?"}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println(resp.Header.Get("Content-Type"))
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			fmt.Println(data)
			break
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						ID       string
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				}
				FinishReason *string `json:"finish_reason"`
			}
		}
		_ = json.Unmarshal([]byte(data), &chunk)
		for _, c := range chunk.Choices {
			for _, tc := range c.Delta.ToolCalls {
				fmt.Printf("%s %s %q\n", tc.ID, tc.Function.Name, tc.Function.Arguments)
			}
			if c.FinishReason != nil {
				fmt.Println("finish:", *c.FinishReason)
			}
		}
	}
	fmt.Println("hits:", u.Hits())
	// Output:
	// text/event-stream; charset=utf-8
	// call_weather weather ""
	//   "{\""
	//   "location"
	//   "\":\""
	//   "Paris"
	//   "\"}"
	// finish: tool_calls
	// [DONE]
	// hits: 1
}

func BenchmarkOpenAIChatStream(b *testing.B) {
	u := fake.New(b, fake.OpenAIChat(paris))
	body := `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[]}`
	for b.Loop() {
		mustPost(b, u.URL()+"/v1/chat/completions", body)
	}
}
