package agent_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/examples/agent"
	"github.com/llmproxy/llmproxy/fixture"
	"github.com/llmproxy/llmproxy/proxy/proxytest"
	"github.com/llmproxy/llmproxy/wire"
)

// TestAgentAgainstScenario runs the agent, unchanged, against one scripted
// scenario served by llmproxy's mock, on both its wires (OpenAI Chat
// Completions through openai-go, Anthropic Messages through
// anthropic-sdk-go), streamed and not: no recording, no key, no provider.
// Its tools are the scenario's fixtures, so the file is never written and
// the command never runs; proxytest fails the test on a miss and on a step
// never reached.
func TestAgentAgainstScenario(t *testing.T) {
	wires := []struct {
		api  wire.Kind
		path string // the wire's route under the mock
	}{
		{wire.KindOpenAIChat, "/v1/"},
		{wire.KindAnthropicMessages, "/anthropic/"},
	}
	for _, w := range wires {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%t", w.api, stream), func(t *testing.T) {
				m := proxytest.NewScenario(t, "testdata/agent.scenario.yaml")
				tools, err := fixture.NewProxyExecutor(m.BaseURL())
				if err != nil {
					t.Fatal(err)
				}
				dir := t.TempDir()
				t.Chdir(dir)
				var log strings.Builder
				answer, err := agent.Run(context.Background(), agent.Config{
					API: w.api, BaseURL: m.BaseURL() + w.path, APIKey: "not-a-key", Stream: stream, Tools: tools, Log: &log,
				}, "Write hello to hello.txt, then show it with cat.")
				if err != nil {
					t.Fatalf("agent: %v (misses: %v)", err, m.Misses())
				}
				if want := "I wrote hello.txt and cat printed: hello"; answer != want {
					t.Errorf("answer %q, want %q", answer, want)
				}
				for _, want := range []string{
					`assistant calls write_file({"content":"hello","path":"hello.txt"}) [call_write_file]`,
					`tool write_file → {"bytesWritten":5}`,
					`assistant calls shell({"command":"cat hello.txt"}) [call_shell]`,
				} {
					if !strings.Contains(log.String(), want) {
						t.Errorf("the agent's log lacks %q:\n%s", want, log.String())
					}
				}
				if entries, _ := os.ReadDir(dir); len(entries) != 0 {
					t.Errorf("the agent touched the disk: %v", entries)
				}
				served, err := m.Log()
				if err != nil {
					t.Fatal(err)
				}
				if len(served) != 3 {
					t.Errorf("the mock served %d answers, want 3: %+v", len(served), served)
				}
				for _, e := range served {
					if e.Kind != string(w.api) {
						t.Errorf("step %s was served as %s, want %s", e.Step, e.Kind, w.api)
					}
				}
			})
		}
	}
}

// TestAgentRefusesUnknownAPI: an API the agent does not speak is an error
// that names it, before any request.
func TestAgentRefusesUnknownAPI(t *testing.T) {
	_, err := agent.Run(context.Background(), agent.Config{API: wire.KindGemini, BaseURL: "http://127.0.0.1:1"}, "hi")
	if err == nil || !strings.Contains(err.Error(), `API "gemini"`) {
		t.Errorf("Run with API gemini: %v", err)
	}
}
