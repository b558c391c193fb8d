package proxy_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/view"
)

var updateLogEntry = flag.Bool("update-logentry", false, "rewrite testdata/logentry.golden")

// The proxy's log entry is the view's: one type, so that the journal, the
// API and the live log hold the same value and nothing copies it between
// them.
func TestLogEntryIsTheViewsType(t *testing.T) {
	if got, want := reflect.TypeOf(proxy.LogEntry{}), reflect.TypeOf(view.LogEntry{}); got != want {
		t.Errorf("proxy.LogEntry is %v, want view.LogEntry: one log entry type", got)
	}
}

// An entry with every field set is written as GET /_llmproxy/log has always
// written it (testdata/logentry.golden, written before the proxy's entry
// became the view's): Name, the view's ?cassette= name, is not shown.
func TestLogEntryJSON(t *testing.T) {
	e := proxy.LogEntry{
		Seq: 3, Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Cassette: "c.cassette", Method: "POST",
		Upstream: "openai", Path: "/v1/chat/completions", Kind: "openai-chat", Model: "m", Stream: true, Turns: 2,
		Interaction: 4, Miss: "miss", Closest: 5, Differences: []match.Difference{{Path: "model", Got: `"a"`, Want: `"b"`}},
		Repeat: true, Scenario: "s", Conversation: "conv", Step: "step", Incomplete: true, Status: 200, Millis: 1.5,
		ToolCalls:        []cassette.ToolCall{{ID: "call_1", Name: "f", Arguments: json.RawMessage(`{"a":1}`)}},
		ToolResults:      []cassette.ToolResult{{ID: "call_1", Name: "f", Content: json.RawMessage(`"ok"`), IsError: true}},
		ToolCallsOmitted: 1, ToolResultsOmitted: 2, Name: "dir-name",
	}
	got, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "logentry.golden")
	if *updateLogEntry {
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got)+"\n" != string(want) {
		t.Errorf("a log entry as JSON:\n%s\nwant (%s):\n%s", got, golden, want)
	}
}
