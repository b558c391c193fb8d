package wire

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Output is the form a request asks the answer's content to take: a JSON
// value satisfying a schema (structured output).
type Output struct {
	// Schema is the JSON Schema the value must satisfy; nil when the request
	// asks for none. A Gemini responseSchema (an OpenAPI schema: upper-case
	// types, nullable, propertyOrdering, counts as strings) is given as the
	// JSON Schema it means.
	Schema []byte
	// Tool, when set, is the function the answer must call with the value as
	// its arguments (an Anthropic request that forces one tool); "" means
	// the value is the answer's text.
	Tool string
	// From is the request field the schema was read from
	// ("response_format.json_schema.schema"), for messages.
	From string
}

// maxSchemaDepth bounds the nesting of a Gemini schema that OutputOf
// rewrites.
const maxSchemaDepth = 64

// OutputOf reads the structured output a request body of the given kind
// asks for:
//
//   - OpenAI chat: response_format {type: json_schema}, the schema at
//     response_format.json_schema.schema.
//   - OpenAI Responses: text.format {type: json_schema}, at text.format.schema.
//   - Gemini: generationConfig.responseJsonSchema, else
//     generationConfig.responseSchema (snake_case spellings too).
//   - Anthropic: output_config.format (or the beta output_format)
//     {type: json_schema}, the value as text; else tool_choice
//     {type: tool, name} naming an offered tool, or {type: any} with exactly
//     one tool offered: the value as that tool's arguments, its input_schema
//     the schema.
//   - Ollama: format when it is an object (a schema; "json" asks for none).
//   - Bedrock InvokeModel: as Anthropic, for an Anthropic body.
//
// A request that asks for none gives the zero Output. A body that is not
// JSON, or a tool_choice naming a tool the request does not offer, is an
// error wrapping ErrMalformed.
func OutputOf(kind Kind, body []byte) (Output, error) {
	doc, err := parseDoc(body)
	if err != nil {
		return Output{}, fmt.Errorf("%s request: %w: %v", kind, ErrMalformed, err)
	}
	switch kind {
	case KindOpenAIChat:
		if strOf(doc.Get("response_format.type")) == "json_schema" {
			return schemaAt(doc, "response_format.json_schema.schema"), nil
		}
	case KindOpenAIResponses:
		if strOf(doc.Get("text.format.type")) == "json_schema" {
			return schemaAt(doc, "text.format.schema"), nil
		}
	case KindOllama:
		if doc.Get("format").IsObject() {
			return schemaAt(doc, "format"), nil
		}
	case KindGemini:
		return geminiOutput(kind, doc)
	case KindAnthropicMessages:
		return anthropicOutput(kind, doc)
	case KindBedrockInvoke:
		if invokeFamily(doc) == familyAnthropic {
			return anthropicOutput(kind, doc)
		}
	}
	return Output{}, nil
}

// schemaAt is the schema at path; a missing one is {} (any value).
func schemaAt(doc gjson.Result, path string) Output {
	s := doc.Get(path)
	if !s.Exists() {
		return Output{Schema: []byte("{}"), From: path}
	}
	return Output{Schema: []byte(s.Raw), From: path}
}

func geminiOutput(kind Kind, doc gjson.Result) (Output, error) {
	cfg, cfgKey := memberOf(doc, "generationConfig", "generation_config")
	if js, key := memberOf(cfg, "responseJsonSchema", "response_json_schema"); js.Exists() {
		return Output{Schema: []byte(js.Raw), From: cfgKey + "." + key}, nil
	}
	rs, key := memberOf(cfg, "responseSchema", "response_schema")
	if !rs.Exists() {
		return Output{}, nil
	}
	var b bytes.Buffer
	if err := openAPISchema(&b, rs, 0); err != nil {
		return Output{}, fmt.Errorf("%s request: %w: %s.%s: %v", kind, ErrMalformed, cfgKey, key, err)
	}
	return Output{Schema: b.Bytes(), From: cfgKey + "." + key}, nil
}

func anthropicOutput(kind Kind, doc gjson.Result) (Output, error) {
	for _, path := range []string{"output_config.format", "output_format"} {
		if f := doc.Get(path); strOf(f.Get("type")) == "json_schema" {
			return schemaAt(doc, path+".schema"), nil
		}
	}
	choice := doc.Get("tool_choice")
	var tools []gjson.Result
	each(doc.Get("tools"), func(_ int, t gjson.Result) {
		if strOf(t.Get("name")) != "" {
			tools = append(tools, t)
		}
	})
	name := ""
	switch strOf(choice.Get("type")) {
	case "tool":
		name = strOf(choice.Get("name"))
	case "any":
		if len(tools) != 1 {
			return Output{}, nil
		}
		name = strOf(tools[0].Get("name"))
	default:
		return Output{}, nil
	}
	for i, t := range tools {
		if strOf(t.Get("name")) == name {
			out := schemaAt(t, "input_schema")
			out.Tool, out.From = name, "tools."+strconv.Itoa(i)+".input_schema"
			return out, nil
		}
	}
	return Output{}, fmt.Errorf("%s request: %w: tool_choice names the tool %q, which tools does not offer", kind, ErrMalformed, name)
}

// openAPISchema writes a Gemini (OpenAPI 3.0 subset) schema as the JSON
// Schema it means: types in lower case, nullable as a "null" type,
// properties in propertyOrdering's order, counts given as strings as
// numbers; other keywords as they are.
func openAPISchema(b *bytes.Buffer, s gjson.Result, depth int) error {
	if depth > maxSchemaDepth {
		return fmt.Errorf("a schema nested deeper than %d", maxSchemaDepth)
	}
	if !s.IsObject() {
		b.WriteString(s.Raw)
		return nil
	}
	nullable := s.Get("nullable").Type == gjson.True
	b.WriteByte('{')
	n := 0
	member := func(key string) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.Write(quote(key))
		b.WriteByte(':')
	}
	var err error
	s.ForEach(func(k, v gjson.Result) bool {
		key := k.String()
		switch key {
		case "nullable", "propertyOrdering", "property_ordering", "example":
		case "type":
			t := strings.ToLower(v.String())
			if v.Type != gjson.String || t == "type_unspecified" {
				break // a JSON Schema type list is left out too: responseSchema has none
			}
			member(key)
			if nullable && t != "null" {
				b.WriteByte('[')
				b.Write(quote(t))
				b.WriteString(`,"null"]`)
			} else {
				b.Write(quote(t))
			}
		case "properties":
			member(key)
			err = openAPIProperties(b, v, orderOf(s), depth)
		case "items", "additionalProperties":
			member(key)
			err = openAPISchema(b, v, depth+1)
		case "anyOf", "any_of":
			member("anyOf")
			b.WriteByte('[')
			each(v, func(i int, alt gjson.Result) {
				if i > 0 {
					b.WriteByte(',')
				}
				if err == nil {
					err = openAPISchema(b, alt, depth+1)
				}
			})
			b.WriteByte(']')
		case "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties",
			"min_items", "max_items", "min_length", "max_length", "min_properties", "max_properties":
			member(camel(key))
			if v.Type == gjson.String {
				if _, perr := strconv.ParseUint(v.Str, 10, 63); perr == nil {
					b.WriteString(v.Str)
					break
				}
			}
			b.WriteString(v.Raw)
		default:
			member(key)
			b.WriteString(v.Raw)
		}
		return err == nil
	})
	b.WriteByte('}')
	return err
}

// openAPIProperties writes properties, those named by order first.
func openAPIProperties(b *bytes.Buffer, props gjson.Result, order []string, depth int) error {
	b.WriteByte('{')
	n := 0
	var err error
	write := func(name string, v gjson.Result) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.Write(quote(name))
		b.WriteByte(':')
		if err == nil {
			err = openAPISchema(b, v, depth+1)
		}
	}
	done := map[string]bool{}
	for _, name := range order {
		if v := props.Get(gjson.Escape(name)); v.Exists() && !done[name] {
			done[name] = true
			write(name, v)
		}
	}
	props.ForEach(func(k, v gjson.Result) bool {
		if !done[k.String()] {
			write(k.String(), v)
		}
		return err == nil
	})
	b.WriteByte('}')
	return err
}

func orderOf(s gjson.Result) []string {
	o, _ := memberOf(s, "propertyOrdering", "property_ordering")
	var out []string
	each(o, func(_ int, v gjson.Result) { out = append(out, v.String()) })
	return out
}

// camel spells a snake_case keyword as JSON Schema does.
func camel(key string) string {
	parts := strings.Split(key, "_")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}
