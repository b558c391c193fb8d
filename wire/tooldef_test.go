package wire_test

import (
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

// TestToolDef: a function tool in each provider's shape, member order and
// the schema's bytes kept; Gemini's schema in its OpenAPI subset (type
// names upper-cased, keywords it lacks dropped, at every level).
func TestToolDef(t *testing.T) {
	def := wire.ToolDef{Name: "weather", Description: "Weather <now> & \"here\".",
		Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string","minLength":1,"x-note":"n"},"days":{"type":"array","items":{"type":"integer","default":1}}},"required":["city"],"additionalProperties":false}`)}
	tests := []struct {
		shape string
		got   []byte
		want  string
	}{
		{"openai chat", def.OpenAIChat(),
			`{"type":"function","function":{"name":"weather","description":"Weather <now> & \"here\".","parameters":` + string(def.Parameters) + `}}`},
		{"openai responses", def.OpenAIResponses(),
			`{"type":"function","name":"weather","description":"Weather <now> & \"here\".","parameters":` + string(def.Parameters) + `,"strict":false}`},
		{"anthropic", def.Anthropic(),
			`{"name":"weather","description":"Weather <now> & \"here\".","input_schema":` + string(def.Parameters) + `}`},
		{"gemini", def.GeminiDeclaration(),
			`{"name":"weather","description":"Weather <now> & \"here\".","parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING","minLength":1},"days":{"type":"ARRAY","items":{"type":"INTEGER"}}},"required":["city"]}}`},
	}
	for _, tt := range tests {
		if string(tt.got) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.shape, tt.got, tt.want)
		}
	}
}
