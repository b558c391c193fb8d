package wire_test

import (
	"reflect"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

// TestParseRequestText checks the text read from each turn and the system
// prompt, on every kind's ways of carrying text.
func TestParseRequestText(t *testing.T) {
	tests := []struct {
		name   string
		kind   wire.Kind
		path   string
		body   string
		system string
		texts  []string
	}{
		{
			name: "chat strings and parts", kind: wire.KindOpenAIChat, path: "/v1/chat/completions",
			body: `{"model":"m","messages":[
				{"role":"system","content":"Be brief."},
				{"role":"developer","content":[{"type":"text","text":"Use tools."}]},
				{"role":"user","content":[{"type":"text","text":"Hello"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"there"}]},
				{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"c","content":"{\"a\":1}"}]}`,
			system: "Be brief.\nUse tools.",
			texts:  []string{"Be brief.", "Use tools.", "Hello\nthere", "", `{"a":1}`},
		},
		{
			name: "responses string input", kind: wire.KindOpenAIResponses, path: "/v1/responses",
			body:   `{"model":"m","instructions":"Be brief.","input":"Hi"}`,
			system: "Be brief.", texts: []string{"Hi"},
		},
		{
			name: "responses items", kind: wire.KindOpenAIResponses, path: "/v1/responses",
			body: `{"model":"m","input":[
				{"role":"system","content":"Sys"},
				{"role":"user","content":[{"type":"input_text","text":"Q"}]},
				{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},
				{"type":"function_call_output","call_id":"c","output":"1"}]}`,
			system: "Sys", texts: []string{"Sys", "Q", "", ""},
		},
		{
			name: "anthropic blocks", kind: wire.KindAnthropicMessages, path: "/v1/messages",
			body: `{"model":"m","system":[{"type":"text","text":"S1"},{"type":"text","text":"S2"}],"messages":[
				{"role":"user","content":"Q"},
				{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"A"},{"type":"tool_use","id":"t","name":"f","input":{}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"1"}]}]}`,
			system: "S1\nS2", texts: []string{"Q", "A", ""},
		},
		{
			name: "gemini parts", kind: wire.KindGemini, path: "/v1beta/models/g:generateContent",
			body: `{"systemInstruction":{"parts":[{"text":"S"}]},"contents":[
				{"role":"user","parts":[{"text":"Q1"},{"text":"Q2"}]},
				{"role":"model","parts":[{"text":"why","thought":true},{"functionCall":{"name":"f","args":{}}}]}]}`,
			system: "S", texts: []string{"Q1\nQ2", ""},
		},
		{
			name: "gemini snake case", kind: wire.KindGemini, path: "/v1beta/models/g:generateContent",
			body:   `{"system_instruction":{"parts":[{"text":"S"}]},"contents":[{"role":"user","parts":[{"text":"Q"}]}]}`,
			system: "S", texts: []string{"Q"},
		},
		{
			name: "ollama chat", kind: wire.KindOllama, path: "/api/chat",
			body:   `{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"Q"}]}`,
			system: "S", texts: []string{"S", "Q"},
		},
		{
			name: "ollama generate", kind: wire.KindOllama, path: "/api/generate",
			body:   `{"model":"m","system":"S","prompt":"Q"}`,
			system: "S", texts: []string{"Q"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := wire.ParseRequest(tt.kind, tt.path, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if req.System != tt.system {
				t.Errorf("System = %q, want %q", req.System, tt.system)
			}
			var texts []string
			for _, turn := range req.Turns {
				texts = append(texts, turn.Text)
			}
			if !reflect.DeepEqual(texts, tt.texts) {
				t.Errorf("turn texts = %q, want %q", texts, tt.texts)
			}
		})
	}
}
