package scenario

import (
	"slices"
	"strconv"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

func TestSameJSON(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{`{"a": 1.0, "b":2}`, `{"b":2,"a":1}`, true},
		{`1e2`, `100`, true},
		{`0.1`, `1e-1`, true},
		{`12345678901234567890`, `12345678901234567891`, false}, // beyond float64, still told apart
		{`[1,2]`, `[2,1]`, false},
		{`{"a":1}`, `{"a":1,"b":null}`, false},
		{`"1"`, `1`, false},
		{`null`, `null`, true},
		{`{"a":[{"b":true}]}`, ` { "a" : [ { "b" : true } ] } `, true},
		{`not json`, `not json`, false},
		{`1 2`, `1`, false},
	}
	for _, tt := range tests {
		if got := sameJSON([]byte(tt.a), []byte(tt.b)); got != tt.want {
			t.Errorf("sameJSON(%s, %s) = %v", tt.a, tt.b, got)
		}
	}
}

func TestSentOutputs(t *testing.T) {
	want := []byte(`{"v":1}`)
	tests := []struct {
		kind    wire.Kind
		content string
		match   bool
	}{
		{wire.KindOpenAIChat, `"{\"v\": 1.0}"`, true},
		{wire.KindAnthropicMessages, `[{"type":"text","text":"{\"v\":1}"}]`, true},
		{wire.KindAnthropicMessages, `[{"type":"text","text":"{\"v\":1}"},{"type":"text","text":"x"}]`, false},
		{wire.KindGemini, `{"v":1}`, true},
		{wire.KindGemini, `{"output":{"v":1}}`, true},
		{wire.KindGemini, `{"output":"{\"v\":1}"}`, true},
		{wire.KindOpenAIChat, `"{\"v\": 2}"`, false},
		{wire.KindOpenAIChat, `"v"`, false},
		{wire.KindOpenAIChat, `"{\"v\":1"`, false},
		{wire.KindOpenAIChat, `{"v":1}`, true},
		{wire.KindOpenAIChat, ``, false},
	}
	for _, tt := range tests {
		got := false
		for _, o := range sentOutputs(tt.kind, wire.ToolResult{Content: []byte(tt.content)}) {
			got = got || sameJSON(o, want)
		}
		if got != tt.match {
			t.Errorf("%s %s: matches %v, want %v", tt.kind, tt.content, got, tt.match)
		}
		// sentOutput, which stops at the first reading that matches,
		// says what the whole list says.
		if lazy := sentOutput(tt.kind, wire.ToolResult{Content: []byte(tt.content)}, want); lazy != got {
			t.Errorf("%s %s: sentOutput %v, the readings say %v", tt.kind, tt.content, lazy, got)
		}
	}
}

// TestTurnIn: the walk over a few turns finds, for any path, the turn the
// map of many finds (the path or its longest prefix cut at a '.', the last
// turn of a path).
func TestTurnIn(t *testing.T) {
	var turns []wire.Turn
	for i := range 12 {
		turns = append(turns, wire.Turn{Index: i, Path: "messages." + strconv.Itoa(i)})
	}
	turns = append(turns, wire.Turn{Path: "input"}, wire.Turn{Path: "input"}, wire.Turn{Path: ""}, wire.Turn{Path: "a.b"}, wire.Turn{Path: "a"})
	paths := []string{"", "messages.1", "messages.1.content", "messages.10", "messages.10.tool_calls.0", "messages.100",
		"messages.1x", "messages", "input", "input.0.output", "inputs", "a.b.c", "a.bc", "a", "a.", "x.messages.1", "."}
	many := &view{req: &wire.Request{Turns: append(slices.Clone(turns), make([]wire.Turn, fewTurns)...)}}
	for _, p := range paths {
		if got, want := turnIn(turns, p), many.turnOf(p); got != want {
			t.Errorf("%q: turn %d, the map finds %d", p, got, want)
		}
	}
}
