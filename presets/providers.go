package presets

import "strings"

// The tool definitions below carry the argument schema without its $schema
// member: providers take the schema of the parameters, not a document.

// OpenAIChatTool returns the preset as an OpenAI Chat Completions tool,
// an element of the request's "tools":
//
//	{"type":"function","function":{"name","description","parameters"}}
func (d Descriptor) OpenAIChatTool() []byte {
	if d.s == nil {
		return nil
	}
	return mustMarshal(node{
		{"type", "function"},
		{"function", node{
			{"name", d.s.name},
			{"description", d.s.description},
			{"parameters", d.s.args},
		}},
	})
}

// ResponsesTool returns the preset as an OpenAI Responses API function tool:
//
//	{"type":"function","name","description","parameters","strict":false}
//
// Strict mode stays off because it demands that every property be required,
// and the presets have optional arguments.
func (d Descriptor) ResponsesTool() []byte {
	if d.s == nil {
		return nil
	}
	return mustMarshal(node{
		{"type", "function"},
		{"name", d.s.name},
		{"description", d.s.description},
		{"parameters", d.s.args},
		{"strict", false},
	})
}

// AnthropicTool returns the preset as an Anthropic Messages client tool:
//
//	{"name","description","input_schema"}
func (d Descriptor) AnthropicTool() []byte {
	if d.s == nil {
		return nil
	}
	return mustMarshal(node{
		{"name", d.s.name},
		{"description", d.s.description},
		{"input_schema", d.s.args},
	})
}

// GeminiFunctionDeclaration returns the preset as one entry of a Gemini
// tool's "functionDeclarations":
//
//	{"name","description","parameters"}
//
// Gemini's "parameters" is a Schema object, a subset of OpenAPI 3.0, so the
// argument schema is converted: type names are upper-cased (OBJECT, STRING,
// …) and keywords the subset lacks, additionalProperties above all, are
// dropped. The newer "parametersJsonSchema" would take the schema as it is,
// but "parameters" is what every Gemini API version, Vertex AI and the
// official SDKs accept and send, and it is what recorded Gemini traffic
// carries. Nothing is lost for llmproxy: it validates arguments against the
// full schema itself.
func (d Descriptor) GeminiFunctionDeclaration() []byte {
	if d.s == nil {
		return nil
	}
	return mustMarshal(node{
		{"name", d.s.name},
		{"description", d.s.description},
		{"parameters", gemini(d.s.args)},
	})
}

// geminiKeywords are the JSON Schema keywords Gemini's Schema object also
// has, with the same meaning. Anything else is dropped.
var geminiKeywords = map[string]bool{
	"type": true, "description": true, "format": true, "enum": true,
	"properties": true, "required": true, "items": true,
	"minimum": true, "maximum": true, "minItems": true, "maxItems": true,
	"minLength": true, "maxLength": true, "pattern": true, "title": true,
}

// gemini converts a schema to Gemini's OpenAPI subset.
func gemini(n node) node {
	out := make(node, 0, len(n))
	for _, m := range n {
		if !geminiKeywords[m.key] {
			continue
		}
		switch m.key {
		case "type":
			m.val = strings.ToUpper(m.val.(string))
		case "items":
			m.val = gemini(m.val.(node))
		case "properties":
			props := m.val.(node)
			conv := make(node, len(props))
			for i, p := range props {
				conv[i] = member{p.key, gemini(p.val.(node))}
			}
			m.val = conv
		}
		out = append(out, m)
	}
	return out
}
