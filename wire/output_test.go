package wire_test

import (
	"errors"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

// TestOutputOf: what counts as asking for structured output, on each wire.
func TestOutputOf(t *testing.T) {
	tests := []struct {
		name       string
		kind       wire.Kind
		body       string
		schema     string
		tool, from string
	}{
		{"chat json_schema", wire.KindOpenAIChat,
			`{"model":"m","messages":[],"response_format":{"type":"json_schema","json_schema":{"name":"w","strict":true,"schema":{"type":"object"}}}}`,
			`{"type":"object"}`, "", "response_format.json_schema.schema"},
		{"chat json_object asks for no schema", wire.KindOpenAIChat, `{"messages":[],"response_format":{"type":"json_object"}}`, "", "", ""},
		{"chat without", wire.KindOpenAIChat, `{"messages":[]}`, "", "", ""},
		{"responses text.format", wire.KindOpenAIResponses,
			`{"input":"x","text":{"format":{"type":"json_schema","name":"w","schema":{"type":"string"}}}}`, `{"type":"string"}`, "", "text.format.schema"},
		{"responses text", wire.KindOpenAIResponses, `{"input":"x","text":{"format":{"type":"text"}}}`, "", "", ""},
		{"gemini responseJsonSchema", wire.KindGemini,
			`{"contents":[],"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"integer"}}}`, `{"type":"integer"}`, "", "generationConfig.responseJsonSchema"},
		{"gemini responseSchema", wire.KindGemini,
			`{"contents":[],"generationConfig":{"responseSchema":{"type":"OBJECT","properties":{"b":{"type":"STRING","nullable":true},"a":{"type":"ARRAY","items":{"type":"INTEGER"},"minItems":"2"}},"propertyOrdering":["a","b"],"required":["a"]}}}`,
			`{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"},"minItems":2},"b":{"type":["string","null"]}},"required":["a"]}`, "", "generationConfig.responseSchema"},
		{"gemini snake case", wire.KindGemini, `{"contents":[],"generation_config":{"response_schema":{"type":"STRING","enum":["x"]}}}`,
			`{"type":"string","enum":["x"]}`, "", "generation_config.response_schema"},
		{"anthropic forced tool", wire.KindAnthropicMessages,
			`{"model":"m","max_tokens":9,"messages":[],"tools":[{"name":"other","input_schema":{"type":"object"}},{"name":"record","input_schema":{"type":"object","properties":{"x":{"type":"string"}}}}],"tool_choice":{"type":"tool","name":"record"}}`,
			`{"type":"object","properties":{"x":{"type":"string"}}}`, "record", "tools.1.input_schema"},
		{"anthropic any with one tool", wire.KindAnthropicMessages,
			`{"messages":[],"tools":[{"name":"only","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"}}`, `{"type":"object"}`, "only", "tools.0.input_schema"},
		{"anthropic any with two tools", wire.KindAnthropicMessages,
			`{"messages":[],"tools":[{"name":"a","input_schema":{}},{"name":"b","input_schema":{}}],"tool_choice":{"type":"any"}}`, "", "", ""},
		{"anthropic auto", wire.KindAnthropicMessages, `{"messages":[],"tools":[{"name":"a","input_schema":{}}],"tool_choice":{"type":"auto"}}`, "", "", ""},
		{"anthropic output_config", wire.KindAnthropicMessages,
			`{"messages":[],"output_config":{"format":{"type":"json_schema","schema":{"type":"boolean"}}}}`, `{"type":"boolean"}`, "", "output_config.format.schema"},
		{"ollama format schema", wire.KindOllama, `{"messages":[],"format":{"type":"object"}}`, `{"type":"object"}`, "", "format"},
		{"ollama format json", wire.KindOllama, `{"messages":[],"format":"json"}`, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := wire.OutputOf(tt.kind, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if string(out.Schema) != tt.schema || out.Tool != tt.tool || out.From != tt.from {
				t.Errorf("got schema %s tool %q from %q\nwant schema %s tool %q from %q", out.Schema, out.Tool, out.From, tt.schema, tt.tool, tt.from)
			}
		})
	}
}

func TestOutputOfBadInput(t *testing.T) {
	tests := []struct {
		name string
		kind wire.Kind
		body string
	}{
		{"not JSON", wire.KindOpenAIChat, `{"response_format":`},
		{"forced tool not offered", wire.KindAnthropicMessages, `{"messages":[],"tools":[],"tool_choice":{"type":"tool","name":"ghost"}}`},
		{"gemini schema too deep", wire.KindGemini, `{"generationConfig":{"responseSchema":` + deepItems(70) + `}}`},
	}
	for _, tt := range tests {
		if _, err := wire.OutputOf(tt.kind, []byte(tt.body)); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", tt.name, err)
		}
	}
}

func deepItems(n int) string {
	s := `{"type":"STRING"}`
	for range n {
		s = `{"type":"ARRAY","items":` + s + `}`
	}
	return s
}
