package weather_test

import (
	"context"
	"os"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"

	weather "github.com/llmproxy/llmproxy/examples/langchaingo"
)

// answer is what the model says once it has the weather. (The project's CI
// records through fake providers that always say it.)
const answer = "It is sunny in Paris."

func TestAsk(t *testing.T) {
	if os.Getenv("LLMPROXY_URL") == "" {
		t.Skip("run under llmproxy: llmproxy replay --cassette weather.cassette -- go test ./...")
	}
	models := map[string]func() (llms.Model, error){
		// OPENAI_BASE_URL and OPENAI_API_KEY are read by the openai package.
		"openai": func() (llms.Model, error) { return openai.New(openai.WithModel("gpt-4o-mini")) },
		// The anthropic package reads ANTHROPIC_API_KEY but no base URL,
		// and wants the versioned API root.
		"anthropic": func() (llms.Model, error) {
			return anthropic.New(anthropic.WithModel("claude-sonnet-4-5"),
				anthropic.WithBaseURL(os.Getenv("ANTHROPIC_BASE_URL")+"/v1"))
		},
	}
	for name, newModel := range models {
		for _, stream := range []bool{false, true} {
			label := name
			if stream {
				label += ", streamed"
			}
			t.Run(label, func(t *testing.T) {
				model, err := newModel()
				if err != nil {
					t.Fatal(err)
				}
				// Each case asks its own question, so no two send the same request.
				got, err := weather.Ask(context.Background(), model, "What is the weather in Paris? (langchaingo "+label+")", stream)
				if err != nil {
					t.Fatal(err)
				}
				if got != answer {
					t.Errorf("answer %q, want %q", got, answer)
				}
			})
		}
	}
}
