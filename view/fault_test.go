package view_test

import (
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/view"
)

// TestLogShowsFaults: the live log names an injected fault and the
// request of its conversation it fell on, and a fault not injected with
// why; an answer a fault cut short is not one the client left.
func TestLogShowsFaults(t *testing.T) {
	src := sampleSource(t)
	now := time.Now()
	src.add(view.LogEntry{Time: now, Method: "POST", Upstream: "openai", Path: "/v1/chat/completions", Kind: "openai-chat",
		Status: 429, Fault: "429@rate=0.1", FaultRequest: 3, Incomplete: true})
	src.add(view.LogEntry{Time: now, Method: "POST", Upstream: "openai", Path: "/v1/chat/completions", Kind: "openai-chat",
		Status: 200, Interaction: 1, Fault: "cut@event=9", FaultRequest: 1, FaultSkipped: "cut@event=9 names event 9, but the stream has 4 events"})
	srv, _ := serve(t, src, "")
	_, body := get(t, srv.URL+"/_llmproxy/ui/log")
	for _, want := range []string{
		`fault <code>429@rate=0.1</code> · request 3`, `class="badge warn">cut short`,
		`fault not injected <code>cut@event=9</code> · request 1`, "but the stream has 4 events",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the log page lacks %q", want)
		}
	}
	if strings.Contains(body, "client left") {
		t.Errorf("a faulted answer is shown as one the client left")
	}
}
