package scenario

import (
	"bytes"
	"encoding/json"
	"math/big"

	"github.com/llmproxy/llmproxy/wire"
)

// sameJSON reports whether a and b are equal as JSON values: key order,
// whitespace and number spelling aside (1.0, 1 and 1e0 are one number). Text
// that is not JSON equals nothing.
//
// It is the scenario package's one JSON equality; every condition compares
// through it.
func sameJSON(a, b []byte) bool {
	va, ok := decodeJSON(a)
	if !ok {
		return false
	}
	vb, ok := decodeJSON(b)
	return ok && sameValue(va, vb)
}

func decodeJSON(b []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return nil, false
	}
	return v, true
}

func sameValue(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, va := range a {
			vb, ok := b[k]
			if !ok || !sameValue(va, vb) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameValue(a[i], b[i]) {
				return false
			}
		}
		return true
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		if a == b {
			return true
		}
		ra, oka := new(big.Rat).SetString(string(a))
		rb, okb := new(big.Rat).SetString(string(b))
		return oka && okb && ra.Cmp(rb) == 0
	default: // string, bool, nil
		return a == b
	}
}

// sentOutputs returns the ways of reading the tool output that a tool
// result's content carries, most unwrapped first: a JSON string holding JSON
// is that JSON; one text block is its text; a Gemini response
// {"output": …} is the output; and always the content itself. A condition
// on a result holds when any of them is the value it wants, so a result
// written by json.dumps, JSON.stringify or a Go encoder from the fixture
// matches it.
func sentOutputs(kind wire.Kind, content []byte) [][]byte {
	content = bytes.TrimSpace(content)
	var out [][]byte
	add := func(b []byte) {
		if s, ok := jsonString(b); ok {
			if inner := bytes.TrimSpace([]byte(s)); json.Valid(inner) {
				out = append(out, inner)
			}
		}
		out = append(out, b)
	}
	if len(content) > 0 && content[0] == '[' {
		var blocks []struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if json.Unmarshal(content, &blocks) == nil && len(blocks) == 1 && blocks[0].Text != nil {
			text, _ := json.Marshal(*blocks[0].Text)
			add(text)
		}
	}
	if kind == wire.KindGemini && len(content) > 0 && content[0] == '{' {
		var members map[string]json.RawMessage
		if json.Unmarshal(content, &members) == nil && len(members) == 1 && members["output"] != nil {
			add(members["output"])
		}
	}
	add(content)
	return out
}

// jsonString returns the text of a JSON string token.
func jsonString(b []byte) (string, bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(b, &s) != nil {
		return "", false
	}
	return s, true
}

// compactJSON returns b compacted, or b itself when it is not JSON.
func compactJSON(b []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}
