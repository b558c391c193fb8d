package wire

import (
	"strings"

	"github.com/tidwall/gjson"
)

// A ToolDef is a function tool as an application offers it to a model: its
// name, its description and the JSON Schema of its arguments. Its methods
// write it as each provider's request declares a tool, with the schema's
// bytes and member order kept (Gemini's converted, see GeminiDeclaration).
type ToolDef struct {
	Name        string
	Description string
	// Parameters is the argument schema, one JSON object without a $schema
	// member: providers take the schema of the parameters, not a document.
	Parameters []byte
}

// OpenAIChat returns the tool as an OpenAI Chat Completions tool, an
// element of the request's "tools":
//
//	{"type":"function","function":{"name","description","parameters"}}
func (t ToolDef) OpenAIChat() []byte {
	var w jsonw
	w.Obj().K("type").Str("function").K("function").Obj()
	t.head(&w).K("parameters").Raw(t.Parameters).End()
	return w.End().Bytes()
}

// OpenAIResponses returns the tool as an OpenAI Responses API function
// tool:
//
//	{"type":"function","name","description","parameters","strict":false}
//
// Strict mode stays off because it demands that every property be required,
// and tools have optional arguments.
func (t ToolDef) OpenAIResponses() []byte {
	var w jsonw
	w.Obj().K("type").Str("function")
	t.head(&w).K("parameters").Raw(t.Parameters).K("strict").Bool(false)
	return w.End().Bytes()
}

// Anthropic returns the tool as an Anthropic Messages client tool:
//
//	{"name","description","input_schema"}
func (t ToolDef) Anthropic() []byte {
	var w jsonw
	t.head(w.Obj()).K("input_schema").Raw(t.Parameters)
	return w.End().Bytes()
}

// GeminiDeclaration returns the tool as one entry of a Gemini tool's
// "functionDeclarations":
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
func (t ToolDef) GeminiDeclaration() []byte {
	var w jsonw
	t.head(w.Obj()).K("parameters")
	geminiSchema(&w, gjson.ParseBytes(t.Parameters))
	return w.End().Bytes()
}

// head writes the name and the description.
func (t ToolDef) head(w *jsonw) *jsonw {
	return w.K("name").Str(t.Name).K("description").Str(t.Description)
}

// geminiKeywords are the JSON Schema keywords Gemini's Schema object also
// has, with the same meaning. Anything else is dropped.
var geminiKeywords = map[string]bool{
	"type": true, "description": true, "format": true, "enum": true,
	"properties": true, "required": true, "items": true,
	"minimum": true, "maximum": true, "minItems": true, "maxItems": true,
	"minLength": true, "maxLength": true, "pattern": true, "title": true,
}

// geminiSchema writes a schema in Gemini's OpenAPI subset.
func geminiSchema(w *jsonw, schema gjson.Result) {
	w.Obj()
	schema.ForEach(func(k, v gjson.Result) bool {
		key := k.String()
		if !geminiKeywords[key] {
			return true
		}
		w.K(key)
		switch {
		case key == "type" && v.Type == gjson.String:
			w.Str(strings.ToUpper(v.String()))
		case key == "items" && v.IsObject():
			geminiSchema(w, v)
		case key == "properties" && v.IsObject():
			w.Obj()
			v.ForEach(func(name, prop gjson.Result) bool {
				w.K(name.String())
				geminiSchema(w, prop)
				return true
			})
			w.End()
		default:
			w.Raw([]byte(v.Raw))
		}
		return true
	})
	w.End()
}
