package agent_test

import (
	"context"
	"os"
	"testing"

	"github.com/llmproxy/llmproxy/examples/agent"
	"github.com/llmproxy/llmproxy/fixture"
	"github.com/llmproxy/llmproxy/proxy/proxytest"
)

// TestAgentAgainstScenario runs the agent, unchanged, against a scripted
// scenario served by llmproxy's mock, streamed and not: no recording, no
// key, no provider. Its tools are the scenario's fixtures, so the file is
// never written and the command never runs; proxytest fails the test on a
// miss and on a step never reached.
func TestAgentAgainstScenario(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := "json"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			m := proxytest.NewScenario(t, "testdata/agent.scenario.yaml")
			tools, err := fixture.NewProxyExecutor(m.BaseURL())
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			t.Chdir(dir)
			answer, err := agent.Run(context.Background(), agent.Config{
				BaseURL: m.BaseURL() + "/v1/", APIKey: "not-a-key", Stream: stream, Tools: tools,
			}, "Write hello to hello.txt, then show it with cat.")
			if err != nil {
				t.Fatalf("agent: %v (misses: %v)", err, m.Misses())
			}
			if want := "I wrote hello.txt and cat printed: hello"; answer != want {
				t.Errorf("answer %q, want %q", answer, want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("the agent touched the disk: %v", entries)
			}
		})
	}
}
