package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/wire"
)

// The journal holds at most maxBytes, whatever its entries hold: adding
// entries of 200 KB of tool results each drops the oldest, keeps the
// newest, and every seq still counts.
func TestJournalIsBoundedInBytes(t *testing.T) {
	j := journal{limit: 10000, maxBytes: 1 << 20}
	big := strings.Repeat("x", 4000)
	for k := 1; k <= 600; k++ {
		e := logged{LogEntry: LogEntry{Miss: "m", Status: 400}}
		for range 50 {
			e.ToolResults = append(e.ToolResults, cassette.ToolResult{ID: "c", Content: json.RawMessage(`"` + big + `"`)})
		}
		j.add(e)
		if j.bytes > j.maxBytes {
			t.Fatalf("after %d entries the journal holds %d bytes, past its bound of %d", k, j.bytes, j.maxBytes)
		}
	}
	got, dropped := j.snapshot()
	if len(got) == 0 || got[len(got)-1].Seq != 600 || dropped+len(got) != 600 {
		t.Fatalf("%d entries kept, %d dropped, newest %v: want the newest and every seq counted", len(got), dropped, got[len(got)-1].Seq)
	}
	held := 0
	for _, e := range got {
		held += e.size()
	}
	if held > j.maxBytes || held != j.bytes {
		t.Errorf("entries of %d bytes held, counted as %d, bound %d", held, j.bytes, j.maxBytes)
	}
}

// One entry keeps at most maxLoggedSummary bytes of tool results and
// calls, and says how many it left out.
func TestLogSummaryIsBoundedPerEntry(t *testing.T) {
	var req wire.Request
	for k := range 50 {
		req.ToolResults = append(req.ToolResults, wire.ToolResult{CallID: fmt.Sprint(k), Content: []byte(`"` + strings.Repeat("y", 4000) + `"`)})
	}
	var calls []cassette.ToolCall
	for k := range 50 {
		calls = append(calls, cassette.ToolCall{ID: fmt.Sprint(k), Name: "f", Arguments: json.RawMessage(`{"a":"` + strings.Repeat("z", 1000) + `"}`)})
	}
	var e logged
	e.keepToolCalls(calls)
	e.summarizeParsed(&req)
	kept := 0
	for _, c := range e.ToolCalls {
		kept += len(c.Arguments)
	}
	for _, r := range e.ToolResults {
		kept += len(r.Content)
	}
	if kept > maxLoggedSummary+2*maxLoggedResult {
		t.Errorf("an entry keeps %d bytes of tool traffic, want about %d at most", kept, maxLoggedSummary)
	}
	if e.ToolCallsOmitted+len(e.ToolCalls) != 50 || e.ToolResultsOmitted+len(e.ToolResults) != 50 || e.ToolResultsOmitted == 0 {
		t.Errorf("calls kept %d + omitted %d, results kept %d + omitted %d: want 50 each, some omitted",
			len(e.ToolCalls), e.ToolCallsOmitted, len(e.ToolResults), e.ToolResultsOmitted)
	}
}
