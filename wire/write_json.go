package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// jsonw appends one JSON document with members in the order they are
// written, the way each provider orders its own. Values are written after
// K (in an object) or directly (in an array); Obj and Arr open a container
// that End closes.
type jsonw struct {
	b        []byte
	closers  []byte // '}' or ']' per open container
	started  []bool // per open container: a member was written
	afterKey bool
}

// value writes the separator a new value needs.
func (w *jsonw) value() {
	if w.afterKey {
		w.afterKey = false
		return
	}
	if n := len(w.started); n > 0 {
		if w.started[n-1] {
			w.b = append(w.b, ',')
		}
		w.started[n-1] = true
	}
}

// K writes an object member's key; the next call writes its value.
func (w *jsonw) K(key string) *jsonw {
	w.value()
	w.b = appendString(w.b, key)
	w.b = append(w.b, ':')
	w.afterKey = true
	return w
}

func (w *jsonw) open(c, closer byte) *jsonw {
	w.value()
	w.b = append(w.b, c)
	w.closers = append(w.closers, closer)
	w.started = append(w.started, false)
	return w
}

// Obj opens an object.
func (w *jsonw) Obj() *jsonw { return w.open('{', '}') }

// Arr opens an array.
func (w *jsonw) Arr() *jsonw { return w.open('[', ']') }

// End closes the innermost open container.
func (w *jsonw) End() *jsonw {
	n := len(w.closers) - 1
	w.b = append(w.b, w.closers[n])
	w.closers, w.started = w.closers[:n], w.started[:n]
	return w
}

// Str writes a string.
func (w *jsonw) Str(s string) *jsonw {
	w.value()
	w.b = appendString(w.b, s)
	return w
}

// Int writes an integer.
func (w *jsonw) Int(n int64) *jsonw {
	w.value()
	w.b = strconv.AppendInt(w.b, n, 10)
	return w
}

// Bool writes true or false.
func (w *jsonw) Bool(v bool) *jsonw {
	w.value()
	w.b = strconv.AppendBool(w.b, v)
	return w
}

// Raw writes a JSON value given as text (it must be valid JSON).
func (w *jsonw) Raw(v []byte) *jsonw {
	w.value()
	w.b = append(w.b, v...)
	return w
}

// Null writes null.
func (w *jsonw) Null() *jsonw { return w.Raw(nullJSON) }

// StrOrNull writes s, or null when s is "".
func (w *jsonw) StrOrNull(s string) *jsonw {
	if s == "" {
		return w.Null()
	}
	return w.Str(s)
}

// Bytes returns the document (all containers must be closed).
func (w *jsonw) Bytes() []byte { return w.b }

var (
	nullJSON        = []byte("null")
	emptyObjectJSON = []byte("{}")
	emptyArrayJSON  = []byte("[]")
)

// indented pretty-prints a compact document with the given indent, keeping
// key order and number spelling, as OpenAI (2 or 4 spaces) and Google do.
func indented(doc []byte, in string) []byte {
	var buf bytes.Buffer
	buf.Grow(len(doc) + len(doc)/2)
	if err := json.Indent(&buf, doc, "", in); err != nil {
		// The writers only produce valid JSON; keep it as it is if not.
		return doc
	}
	return buf.Bytes()
}

// googleSpaced puts a space after every member's colon and leaves commas
// alone: the layout of Gemini's alt=sse events
// (`{"candidates": [{"content": {"parts": [{"text": "Hi"}]` …).
func googleSpaced(doc []byte) []byte {
	out := make([]byte, 0, len(doc)+len(doc)/8)
	inString, escaped := false, false
	for _, c := range doc {
		out = append(out, c)
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && c == ':':
			out = append(out, ' ')
		}
	}
	return out
}

// padded inserts n spaces before an object's closing brace, as Anthropic
// pads its stream events (`{"type":"message_stop"   }`).
func padded(doc []byte, n int) []byte {
	out := make([]byte, 0, len(doc)+n)
	out = append(out, doc[:len(doc)-1]...)
	for range n {
		out = append(out, ' ')
	}
	return append(out, doc[len(doc)-1])
}
