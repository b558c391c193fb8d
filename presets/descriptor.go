package presets

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/llmproxy/llmproxy/wire"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Descriptor is the untyped view of a preset: its function name, its
// description, its three schemas, validation of raw payloads and its tool
// definition in each provider's wire shape. Descriptors are values that
// share immutable data; the zero Descriptor is no preset at all, and its
// validation methods report ErrUnknownPreset.
type Descriptor struct {
	s *spec
}

// Param is one argument of a preset, as its argument schema declares it.
type Param struct {
	Name     string
	Required bool
}

// spec holds everything a preset is. It is built once at package
// initialisation and never changed; only the compiled schemas are filled in,
// once, on first use.
type spec struct {
	name        string
	description string
	params      []Param
	args        node // argument schema as authored, without $schema
	schemas     [3][]byte
	compiled    func() ([3]*jsonschema.Schema, error)
}

// The three documents a preset describes, in the order of spec.schemas.
const (
	partArguments = iota
	partResult
	partError
)

var partNames = [3]string{"arguments", "result", "error"}

// partSentinels are the errors a violation of each part wraps.
var partSentinels = [3]error{ErrInvalidArguments, ErrInvalidResult, ErrInvalidResult}

func newDescriptor(name, description string, args []field, result node) Descriptor {
	s := &spec{name: name, description: description}
	for _, f := range args {
		s.params = append(s.params, Param{Name: f.name, Required: f.required})
	}
	s.args = object("", args...)
	s.schemas = [3][]byte{
		mustMarshal(document(s.args)),
		mustMarshal(document(result)),
		mustMarshal(errorSchema()),
	}
	s.compiled = sync.OnceValues(func() ([3]*jsonschema.Schema, error) {
		var out [3]*jsonschema.Schema
		for i, raw := range s.schemas {
			sch, err := compile("https://llmproxy.invalid/presets/"+name+"/"+partNames[i]+".schema.json", raw)
			if err != nil {
				return out, err
			}
			out[i] = sch
		}
		return out, nil
	})
	return Descriptor{s: s}
}

// Name returns the preset's function name, such as "web_search".
func (d Descriptor) Name() string {
	if d.s == nil {
		return ""
	}
	return d.s.name
}

// Description returns the one-sentence description offered to a model.
func (d Descriptor) Description() string {
	if d.s == nil {
		return ""
	}
	return d.s.description
}

// Params returns the preset's arguments in the order it declares them.
func (d Descriptor) Params() []Param {
	if d.s == nil {
		return nil
	}
	return slices.Clone(d.s.params)
}

// DefaultID returns the call id used when none is given: "call_" followed by
// the function name.
func (d Descriptor) DefaultID() string { return "call_" + d.Name() }

// ArgumentsSchema returns the JSON Schema (draft 2020-12) of the call
// arguments, as compact JSON.
func (d Descriptor) ArgumentsSchema() []byte { return d.schema(partArguments) }

// ResultSchema returns the JSON Schema of a successful result.
func (d Descriptor) ResultSchema() []byte { return d.schema(partResult) }

// ErrorSchema returns the JSON Schema of the error envelope, which is the same
// for every preset.
func (d Descriptor) ErrorSchema() []byte { return d.schema(partError) }

func (d Descriptor) schema(part int) []byte {
	if d.s == nil {
		return nil
	}
	return slices.Clone(d.s.schemas[part])
}

// ValidateArguments checks raw call arguments against the argument schema.
// A violation is a *ValidationError wrapping ErrInvalidArguments.
func (d Descriptor) ValidateArguments(raw []byte) error {
	_, err := d.check(partArguments, raw)
	return err
}

// ValidateResult checks a raw successful result against the result schema.
// A violation is a *ValidationError wrapping ErrInvalidResult.
func (d Descriptor) ValidateResult(raw []byte) error {
	_, err := d.check(partResult, raw)
	return err
}

// ValidateError checks a raw error envelope against the error schema.
// A violation is a *ValidationError wrapping ErrInvalidResult.
func (d Descriptor) ValidateError(raw []byte) error {
	_, err := d.check(partError, raw)
	return err
}

// check validates raw against one of the schemas and returns its canonical
// form.
func (d Descriptor) check(part int, raw []byte) ([]byte, error) {
	if d.s == nil {
		return nil, fmt.Errorf("presets: zero Descriptor: %w", ErrUnknownPreset)
	}
	v, err := decode(raw)
	if err != nil {
		return nil, invalid(partSentinels[part], d.s.name, partNames[part],
			Violation{Rule: "json", Message: "invalid JSON: " + err.Error()})
	}
	schemas, err := d.s.compiled()
	if err != nil {
		return nil, err
	}
	if err := schemas[part].Validate(v); err != nil {
		return nil, invalid(partSentinels[part], d.s.name, partNames[part], violations(err)...)
	}
	return marshal(v)
}

// MarshalJSON describes the preset as
// {"name","description","argumentsSchema","resultSchema","errorSchema"}.
func (d Descriptor) MarshalJSON() ([]byte, error) {
	if d.s == nil {
		return []byte("null"), nil
	}
	return marshal(node{
		{"name", d.s.name},
		{"description", d.s.description},
		{"argumentsSchema", json.RawMessage(d.s.schemas[partArguments])},
		{"resultSchema", json.RawMessage(d.s.schemas[partResult])},
		{"errorSchema", json.RawMessage(d.s.schemas[partError])},
	})
}

// Tool returns the preset as the function tool an application offers a
// model: its name, description and argument schema (without $schema), which
// package wire writes in each provider's shape.
func (d Descriptor) Tool() wire.ToolDef {
	if d.s == nil {
		return wire.ToolDef{}
	}
	return wire.ToolDef{Name: d.s.name, Description: d.s.description, Parameters: mustMarshal(d.s.args)}
}

// OpenAIChatTool returns the preset as an OpenAI Chat Completions tool
// (wire.ToolDef.OpenAIChat); nil for the zero Descriptor.
func (d Descriptor) OpenAIChatTool() []byte { return d.tool(wire.ToolDef.OpenAIChat) }

// ResponsesTool returns the preset as an OpenAI Responses API function tool
// (wire.ToolDef.OpenAIResponses); nil for the zero Descriptor.
func (d Descriptor) ResponsesTool() []byte { return d.tool(wire.ToolDef.OpenAIResponses) }

// AnthropicTool returns the preset as an Anthropic Messages client tool
// (wire.ToolDef.Anthropic); nil for the zero Descriptor.
func (d Descriptor) AnthropicTool() []byte { return d.tool(wire.ToolDef.Anthropic) }

// GeminiFunctionDeclaration returns the preset as one entry of a Gemini
// tool's "functionDeclarations" (wire.ToolDef.GeminiDeclaration); nil for
// the zero Descriptor.
func (d Descriptor) GeminiFunctionDeclaration() []byte {
	return d.tool(wire.ToolDef.GeminiDeclaration)
}

// tool writes the preset's tool in one provider's shape.
func (d Descriptor) tool(shape func(wire.ToolDef) []byte) []byte {
	if d.s == nil {
		return nil
	}
	return shape(d.Tool())
}
