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
	// indent, when set, lays the document out as json.Indent with no
	// prefix and this indent does (what indented gives of the compact
	// document): each member or element on its own line, ": " after a
	// key, empty containers as {} and []. Raw values must then hold no
	// member or element.
	indent string
}

// reset empties w for another document, keeping its memory.
func (w *jsonw) reset() {
	w.b = w.b[:0]
	w.next()
}

// next readies w, whose document is whole, to append another after it
// (its containers all closed, no key pending).
func (w *jsonw) next() {
	w.closers, w.started, w.afterKey = w.closers[:0], w.started[:0], false
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
		if w.indent != "" {
			w.newline(n)
		}
	}
}

// newline starts a line indented depth times.
func (w *jsonw) newline(depth int) {
	w.b = append(w.b, '\n')
	for range depth {
		w.b = append(w.b, w.indent...)
	}
}

// K writes an object member's key; the next call writes its value.
func (w *jsonw) K(key string) *jsonw {
	w.value()
	w.b = appendString(w.b, key)
	w.b = append(w.b, ':')
	if w.indent != "" {
		w.b = append(w.b, ' ')
	}
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

// members writes, with fn, the members of an object whose '{' is already
// written, and closes it.
func (w *jsonw) members(fn func(w *jsonw)) {
	w.closers = append(w.closers, '}')
	w.started = append(w.started, false)
	fn(w)
	w.End()
}

// Obj opens an object.
func (w *jsonw) Obj() *jsonw { return w.open('{', '}') }

// Arr opens an array.
func (w *jsonw) Arr() *jsonw { return w.open('[', ']') }

// End closes the innermost open container.
func (w *jsonw) End() *jsonw {
	n := len(w.closers) - 1
	if w.indent != "" && w.started[n] {
		w.newline(n)
	}
	w.b = append(w.b, w.closers[n])
	w.closers, w.started = w.closers[:n], w.started[:n]
	return w
}

// StrOf writes a string whose characters text appends to its argument;
// they must need no escaping (letters and digits, say).
func (w *jsonw) StrOf(text func(b []byte) []byte) *jsonw {
	w.value()
	w.b = append(text(append(w.b, '"')), '"')
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
// key order and number spelling, as OpenAI (2 or 4 spaces) and Google do:
// the bytes json.Indent writes. The writers produce compact, valid JSON,
// which it lays out in one pass (without json.Indent's validation); a
// document with white space outside its strings goes through json.Indent,
// which keeps one it refuses as it is.
func indented(doc []byte, in string) []byte {
	return appendIndented(make([]byte, 0, len(doc)+len(doc)/2), doc, in)
}

// appendIndented appends indented(doc, in) to dst, which must not overlap
// doc.
func appendIndented(dst, doc []byte, in string) []byte {
	n := len(dst)
	if out, ok := indentCompact(dst, doc, in); ok {
		return out
	}
	var buf bytes.Buffer
	buf.Grow(len(doc) + len(doc)/2)
	if err := json.Indent(&buf, doc, "", in); err != nil {
		return append(dst[:n], doc...)
	}
	return append(dst[:n], buf.Bytes()...)
}

// indentCompact lays out a compact document as json.Indent does: each
// member or element on its own line, indented by its depth, ": " after a
// name, and empty objects and arrays left as {} and []. ok is false for a
// document with white space outside its strings, or more closing brackets
// than opening ones or fewer. It does not check the rest of the syntax.
// It appends to out, which must not overlap doc.
func indentCompact(out, doc []byte, in string) (_ []byte, ok bool) {
	depth := 0
	newline := func() {
		out = append(out, '\n')
		for range depth {
			out = append(out, in...)
		}
	}
	for i := 0; i < len(doc); i++ {
		switch c := doc[i]; c {
		case '"':
			end := stringEnd(doc, i)
			if end < 0 {
				return nil, false
			}
			out = append(out, doc[i:end]...)
			i = end - 1
		case '{', '[':
			out = append(out, c)
			if i+1 < len(doc) && doc[i+1] == c+2 { // '}' is '{'+2, ']' is '['+2
				out = append(out, doc[i+1])
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			if depth == 0 {
				return nil, false
			}
			depth--
			newline()
			out = append(out, c)
		case ',':
			out = append(out, c)
			newline()
		case ':':
			out = append(out, ':', ' ')
		case ' ', '\t', '\n', '\r':
			return nil, false
		default:
			out = append(out, c)
		}
	}
	return out, depth == 0
}

// stringEnd returns the index just past the string literal starting with
// the quote at doc[i], or -1 if it does not end.
func stringEnd(doc []byte, i int) int {
	for j := i + 1; j < len(doc); j++ {
		switch doc[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// googleSpaced puts a space after every member's colon and leaves commas
// alone: the layout of Gemini's alt=sse events
// (`{"candidates": [{"content": {"parts": [{"text": "Hi"}]` …).
func googleSpaced(doc []byte) []byte {
	return appendGoogleSpaced(make([]byte, 0, len(doc)+len(doc)/8), doc)
}

// appendGoogleSpaced appends googleSpaced(doc) to out.
func appendGoogleSpaced(out, doc []byte) []byte {
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
