package scenario

import (
	"bytes"
	"encoding/json"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
	"github.com/llmproxy/llmproxy/wire"
)

// sameJSON reports whether a and b are equal as JSON values: key order,
// whitespace and number spelling aside (1.0, 1 and 1e0 are one number). Text
// that is not JSON equals nothing. Every condition compares through it, and
// it is llmproxy's one JSON equality, jsonvalue.Equal.
func sameJSON(a, b []byte) bool {
	eq, err := jsonvalue.Equal(a, b)
	return err == nil && eq
}

// sentOutputs returns the ways of reading the tool output a tool result
// carries, most unwrapped first: the output wire finds in it (see
// wire.ToolResult.Output) when that is JSON, the output as a JSON string when
// it is carried as text, and the content itself. A condition on a result
// holds when any of them is the value it wants, so a result written by
// json.dumps, JSON.stringify or a Go encoder from the fixture matches it, and
// so does a plain text result its string.
func sentOutputs(kind wire.Kind, r wire.ToolResult) [][]byte {
	var out [][]byte
	eachOutput(kind, r, func(o []byte) bool {
		out = append(out, o)
		return false
	})
	return out
}

// sentOutput reports whether one of the ways of reading r's output
// (sentOutputs) is the JSON value want; it reads them one at a time and
// stops at the first that is.
func sentOutput(kind wire.Kind, r wire.ToolResult, want []byte) bool {
	return eachOutput(kind, r, func(o []byte) bool { return sameJSON(o, want) })
}

// eachOutput calls fn with each of sentOutputs in turn until fn returns
// true, and reports whether it did.
func eachOutput(kind wire.Kind, r wire.ToolResult, fn func(o []byte) bool) bool {
	if o, shape, err := r.Output(kind); err == nil {
		if jsonvalue.Valid(o) && fn(o) {
			return true
		}
		if shape == wire.ShapeString || shape == wire.ShapeTextBlock || shape == wire.ShapeOutputString {
			text, _ := json.Marshal(string(o))
			if fn(text) {
				return true
			}
		}
	}
	return len(r.Content) > 0 && fn(r.Content)
}

// compactJSON returns b compacted, or b itself when it is not JSON.
func compactJSON(b []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}
