package presets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/tidwall/sjson"

	"github.com/llmproxy/llmproxy/wire"
)

// CassetteFixture is a fixture as scrub stores it in a cassette's fixture
// bucket, under its call id:
//
//	{"preset":"weather","function":"get_weather",
//	 "call":{"id":"call_weather","name":"weather","arguments":{…}},
//	 "result":{"callId":"call_weather","name":"weather","content":{…},"isError":false}}
//
// Call.Name and Result.Name are the preset's name; Function is the name the
// application gave the tool, written only when it differs (a --map). The
// arguments and the content are canonical JSON; content is the success
// result, or the error envelope when isError is set.
type CassetteFixture struct {
	Fixture
	// Function is the tool's name on the wire, "" when it is the preset's.
	Function string
}

type cassetteFixtureJSON struct {
	Preset   string     `json:"preset"`
	Function string     `json:"function,omitempty"`
	Call     ToolCall   `json:"call"`
	Result   ToolResult `json:"result"`
}

// MarshalJSON writes the stored form shown on CassetteFixture.
func (f CassetteFixture) MarshalJSON() ([]byte, error) {
	fn := f.Function
	if fn == f.Preset {
		fn = ""
	}
	return marshal(cassetteFixtureJSON{Preset: f.Preset, Function: fn, Call: f.Call, Result: f.Result})
}

// UnmarshalJSON reads the stored form; ParseCassetteFixture also validates.
func (f *CassetteFixture) UnmarshalJSON(b []byte) error {
	var in cassetteFixtureJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*f = CassetteFixture{Fixture: Fixture{Preset: in.Preset, Call: in.Call, Result: in.Result}, Function: in.Function}
	return nil
}

// ParseCassetteFixture decodes and validates a stored fixture. callID is the
// key it was stored under, which must be its call's id.
func ParseCassetteFixture(callID string, raw []byte) (CassetteFixture, error) {
	var f CassetteFixture
	if err := json.Unmarshal(raw, &f); err != nil {
		return f, fmt.Errorf("presets: fixture %s: %w", callID, err)
	}
	if f.Call.ID != callID {
		return f, fmt.Errorf("presets: fixture %s: %w: it holds call %q", callID, ErrInvalidID, f.Call.ID)
	}
	if err := f.Validate(); err != nil {
		return f, fmt.Errorf("presets: fixture %s: %w", callID, err)
	}
	return f, nil
}

// ResultMismatch reports a tool result that differs from its fixture. It
// wraps ErrResultMismatch.
type ResultMismatch struct {
	// CallID is the call the result answers.
	CallID string
	// Path is the gjson path of the result in the request body.
	Path string
	// Got is the tool output that was sent, Want the fixture's, both as
	// compact JSON (or, for output that is not JSON, as sent).
	Got, Want string
}

func (e *ResultMismatch) Error() string {
	return fmt.Sprintf("tool result for call %s differs from its fixture at %s: got %s, fixture %s",
		e.CallID, e.Path, shorten(e.Got, 120), shorten(e.Want, 120))
}

// Unwrap returns ErrResultMismatch.
func (e *ResultMismatch) Unwrap() error { return ErrResultMismatch }

// CheckResult compares a tool result read from a request of the given kind
// with the fixture of its call. It returns nil when they are equal as JSON
// (key order, whitespace and number spelling aside), else a *ResultMismatch.
// The result's content is read as scrub reads it: a JSON string (or a single
// text block) holding JSON, or Gemini's response object, bare or under
// "output".
func (f CassetteFixture) CheckResult(kind wire.Kind, r wire.ToolResult) error {
	out, _, err := toolOutput(kind, r.Content)
	got := string(out)
	if err == nil {
		if canon, cerr := Canonical(out); cerr == nil {
			got = string(canon)
			if jsonEqual(canon, f.Result.Content) {
				return nil
			}
		}
	} else {
		got = string(r.Content)
	}
	return &ResultMismatch{CallID: f.Call.ID, Path: r.Path, Got: got, Want: string(f.Result.Content)}
}

// jsonEqual compares two JSON documents as values, numbers as float64.
func jsonEqual(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// shape is how a tool-result turn carries the tool's output.
type shape uint8

const (
	// shapeString: the content is a JSON string holding the output (OpenAI
	// chat, Responses, Ollama, Anthropic).
	shapeString shape = iota + 1
	// shapeTextBlock: the content is an array of one text block whose text
	// is the output (Anthropic's SDKs, OpenAI content parts).
	shapeTextBlock
	// shapeObject: the content is the output object itself (Gemini
	// functionResponse.response).
	shapeObject
	// shapeOutputObject: a Gemini response {"output": <object>}.
	shapeOutputObject
	// shapeOutputString: a Gemini response {"output": "<json>"}.
	shapeOutputString
)

// toolOutput finds the tool's own output inside a result's content and says
// how it is carried. The output is returned as sent, not yet checked to be
// JSON.
func toolOutput(kind wire.Kind, content []byte) ([]byte, shape, error) {
	content = bytes.TrimSpace(content)
	if len(content) == 0 {
		return nil, 0, fmt.Errorf("the tool-result turn carries no content")
	}
	switch content[0] {
	case '"':
		var s string
		if err := json.Unmarshal(content, &s); err != nil {
			return nil, 0, fmt.Errorf("content: %v", err)
		}
		return []byte(s), shapeString, nil
	case '[':
		var blocks []struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(content, &blocks); err != nil {
			return nil, 0, fmt.Errorf("content blocks: %v", err)
		}
		if len(blocks) != 1 || blocks[0].Text == nil || !strings.HasSuffix(blocks[0].Type, "text") {
			return nil, 0, fmt.Errorf("the content is %d blocks; only one text block can become a fixture", len(blocks))
		}
		return []byte(*blocks[0].Text), shapeTextBlock, nil
	case '{':
		if kind != wire.KindGemini {
			return nil, 0, fmt.Errorf("%s results carry text, not an object", kind)
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(content, &members); err != nil {
			return nil, 0, fmt.Errorf("functionResponse.response: %v", err)
		}
		if out, ok := members["output"]; ok && len(members) == 1 {
			out = bytes.TrimSpace(out)
			if len(out) > 0 && out[0] == '"' {
				var s string
				if err := json.Unmarshal(out, &s); err != nil {
					return nil, 0, fmt.Errorf("functionResponse.response.output: %v", err)
				}
				return []byte(s), shapeOutputString, nil
			}
			return out, shapeOutputObject, nil
		}
		return content, shapeObject, nil
	}
	return nil, 0, fmt.Errorf("the content is %.20s, neither text nor an object", content)
}

// setOutput writes canon (the fixture's canonical output) into body at the
// result whose content is at path, carried the way sh says.
func setOutput(body []byte, path string, sh shape, canon []byte) ([]byte, error) {
	var at string
	var value []byte
	switch sh {
	case shapeString:
		at, value = path, mustMarshal(string(canon))
	case shapeTextBlock:
		at, value = path+".0.text", mustMarshal(string(canon))
	case shapeObject:
		if len(canon) == 0 || canon[0] != '{' {
			return nil, fmt.Errorf("%s: Gemini needs an object result", path)
		}
		at, value = path, canon
	case shapeOutputObject:
		at, value = path+".output", canon
	case shapeOutputString:
		at, value = path+".output", mustMarshal(string(canon))
	default:
		return nil, fmt.Errorf("%s: unknown result shape", path)
	}
	out, err := sjson.SetRawBytes(body, at, value)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", at, wire.ErrMalformed, err)
	}
	return out, nil
}
