package proxy_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/llmproxy/llmproxy/proxy"
)

// TestMockLogSummary: mock's log entry of an answered request summarises
// the request (model, stream, turns, the tool result) as read once for the
// engine, the same whether the request went out streamed or not; a body
// whose secret redaction changed is summarised from the redacted body
// (TestMockRedactsKeyShapedSecrets).
func TestMockLogSummary(t *testing.T) {
	m := startMock(t, []string{weatherScenario})
	result := `{"location":"Paris","temperature":21,"unit":"celsius","condition":"sunny"}`
	for _, stream := range []bool{false, true} {
		conv := map[bool]string{false: "json", true: "sse"}[stream]
		for _, body := range []string{chatBody("", stream), chatBody(result, stream)} {
			if status, _, answer := m.post("/v1/chat/completions", conv, body); status != http.StatusOK {
				t.Fatalf("status %d: %s", status, answer)
			}
		}
	}
	var log struct{ Entries []proxy.LogEntry }
	if st := m.getJSON("/_llmproxy/log", &log); st != http.StatusOK || len(log.Entries) != 4 {
		t.Fatalf("GET /_llmproxy/log: %d, %d entries, want 4", st, len(log.Entries))
	}
	for i, e := range log.Entries {
		stream, answer := i >= 2, i%2 == 1
		wantTurns := 1
		if answer {
			wantTurns = 3
		}
		if e.Model != "gpt-4o-mini" || e.Stream != stream || e.Turns != wantTurns || e.Status != http.StatusOK {
			t.Errorf("entry %d: model %q, stream %v, turns %d, status %d; want gpt-4o-mini, %v, %d, 200", i, e.Model, e.Stream, e.Turns, e.Status, stream, wantTurns)
		}
		switch {
		case answer && (len(e.ToolResults) != 1 || e.ToolResults[0].ID != "call_paris" || !json.Valid(e.ToolResults[0].Content)):
			t.Errorf("entry %d: tool results %+v, want call_paris's", i, e.ToolResults)
		case !answer && (len(e.ToolResults) != 0 || len(e.ToolCalls) != 1):
			t.Errorf("entry %d: tool results %+v, tool calls %+v; want none and the call", i, e.ToolResults, e.ToolCalls)
		}
	}
}
