package wire_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

// TestEchoes: on every wire, the model's turns, the call ids the tool
// results name and previous_response_id are echoes; masked, two requests
// that differ only there are equal, and one whose prompt differs is not.
func TestEchoes(t *testing.T) {
	tests := []struct {
		kind wire.Kind
		path string
		body string // ID and SAY are replaced by each recording's call id and wording
		want []string
	}{
		{wire.KindOpenAIChat, "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"PROMPT"},` +
				`{"role":"assistant","content":"SAY","tool_calls":[{"id":"ID","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"ID","content":"r"}]}`,
			[]string{"messages.2", "messages.3.tool_call_id"}},
		{wire.KindOpenAIResponses, "/v1/responses",
			`{"model":"m","previous_response_id":"resp_ID","input":[{"role":"user","content":"PROMPT"},` +
				`{"type":"reasoning","summary":[{"type":"summary_text","text":"SAY"}]},` +
				`{"type":"function_call","call_id":"ID","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"ID","output":"r"}]}`,
			[]string{"previous_response_id", "input.1", "input.2", "input.3.call_id"}},
		{wire.KindAnthropicMessages, "/v1/messages",
			`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"PROMPT"},` +
				`{"role":"assistant","content":[{"type":"text","text":"SAY"},{"type":"tool_use","id":"ID","name":"f","input":{}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"ID","content":"r"}]}]}`,
			[]string{"messages.1", "messages.2.content.0.tool_use_id"}},
		{wire.KindGemini, "/v1beta/models/g:generateContent",
			`{"contents":[{"role":"user","parts":[{"text":"PROMPT"}]},{"role":"model","parts":[{"text":"SAY"},{"functionCall":{"id":"ID","name":"f","args":{}}}]},` +
				`{"role":"user","parts":[{"functionResponse":{"id":"ID","name":"f","response":{"r":1}}}]}]}`,
			[]string{"contents.1", "contents.2.parts.0.functionResponse.id"}},
		{wire.KindOllama, "/api/chat",
			`{"model":"m","messages":[{"role":"user","content":"PROMPT"},{"role":"assistant","content":"SAY","tool_calls":[{"function":{"name":"f","arguments":{}}}]},` +
				`{"role":"tool","tool_name":"f","content":"r"}]}`,
			[]string{"messages.1"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			masked := func(id, say, prompt string) string {
				t.Helper()
				body := []byte(strings.NewReplacer("ID", id, "SAY", say, "PROMPT", prompt).Replace(tt.body))
				req, err := wire.ParseRequest(tt.kind, tt.path, body)
				if err != nil {
					t.Fatal(err)
				}
				if got := req.Echoes(body); !slices.Equal(got, tt.want) {
					t.Errorf("Echoes %v, want %v", got, tt.want)
				}
				m, err := req.MaskEchoes(body)
				if err != nil {
					t.Fatal(err)
				}
				return string(m)
			}
			a := masked("call_1", "Let me look.", "hi")
			if b := masked("call_2", "Looking it up.", "hi"); a != b {
				t.Errorf("masked requests differ:\n%s\n%s", a, b)
			}
			if c := masked("call_1", "Let me look.", "hello"); a == c {
				t.Errorf("a changed prompt masked away:\n%s", a)
			}
		})
	}
}

// TestPart: a request member is the prompt, the tools offered or a
// parameter.
func TestPart(t *testing.T) {
	for _, tt := range []struct {
		kind       wire.Kind
		path, want string
	}{
		{wire.KindOpenAIChat, "messages.0.content", wire.PartPrompt},
		{wire.KindOpenAIChat, "tools.1.function.name", wire.PartTools},
		{wire.KindOpenAIChat, "temperature", wire.PartParameters},
		{wire.KindAnthropicMessages, "system", wire.PartPrompt},
		{wire.KindGemini, "contents.2.parts.0.text", wire.PartPrompt},
		{wire.KindGemini, "toolConfig.functionCallingConfig.mode", wire.PartTools},
		{wire.KindOpenAIResponses, "instructions", wire.PartPrompt},
		{wire.KindGeneric, "", wire.PartParameters},
	} {
		if got := wire.Part(tt.kind, tt.path); got != tt.want {
			t.Errorf("Part(%s, %q) = %q, want %q", tt.kind, tt.path, got, tt.want)
		}
	}
}
