package wire_test

import (
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

func TestOpening(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind wire.Kind
		body string
		want string
	}{
		{"chat", wire.KindOpenAIChat, `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`, "\n" + `{"role":"system","content":"s"}`},
		{"anthropic", wire.KindAnthropicMessages, `{"system":"be brief","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}`, `"be brief"` + "\n" + `{"role":"user","content":"hi"}`},
		{"responses string", wire.KindOpenAIResponses, `{"instructions":"i","input":"hi"}`, `"i"` + "\n" + `"hi"`},
		{"responses items", wire.KindOpenAIResponses, `{"input":[{"role":"user","content":"hi"}]}`, "\n" + `{"role":"user","content":"hi"}`},
		{"responses previous", wire.KindOpenAIResponses, `{"previous_response_id":"r1","input":[{"type":"function_call_output"}]}`, ""},
		{"gemini", wire.KindGemini, `{"system_instruction":{"parts":[{"text":"s"}]},"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, `{"parts":[{"text":"s"}]}` + "\n" + `{"role":"user","parts":[{"text":"hi"}]}`},
		{"converse", wire.KindBedrockConverse, `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, "\n" + `{"role":"user","content":[{"text":"hi"}]}`},
		{"no turns", wire.KindOpenAIChat, `{"model":"m","messages":[]}`, ""},
		{"not JSON", wire.KindOpenAIChat, `{"messages":[`, ""},
		{"embeddings", wire.KindEmbeddings, `{"input":"hi"}`, ""},
	} {
		sys, first, ok := wire.OpeningSpans(tc.kind, []byte(tc.body))
		got := ""
		if ok {
			got = string(sys) + "\n" + string(first)
		}
		if got != tc.want {
			t.Errorf("%s: OpeningSpans = %q (system, newline, first turn), want %q", tc.name, got, tc.want)
		}
	}
}

// TestOpeningSpans: the spans are Opening's parts, read in place: they
// point into the body and cost no allocation.
func TestOpeningSpans(t *testing.T) {
	body := []byte(`{"system":"be brief","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}`)
	sys, first, ok := wire.OpeningSpans(wire.KindAnthropicMessages, body)
	if !ok || string(sys) != `"be brief"` || string(first) != `{"role":"user","content":"hi"}` {
		t.Fatalf("spans %q, %q, %v", sys, first, ok)
	}
	if &first[0] != &body[strings.Index(string(body), `{"role"`)] {
		t.Errorf("the first turn is a copy, not a slice of the body")
	}
	if n := testing.AllocsPerRun(100, func() { wire.OpeningSpans(wire.KindAnthropicMessages, body) }); n != 0 {
		t.Errorf("OpeningSpans allocates %v times, want 0", n)
	}
	if _, _, ok := wire.OpeningSpans(wire.KindOpenAIChat, nil); ok {
		t.Errorf("an empty body has an opening")
	}
}
