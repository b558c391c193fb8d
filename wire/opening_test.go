package wire_test

import (
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
		if got := string(wire.Opening(tc.kind, []byte(tc.body))); got != tc.want {
			t.Errorf("%s: Opening = %q, want %q", tc.name, got, tc.want)
		}
	}
}
