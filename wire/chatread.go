package wire

import (
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
	"github.com/tidwall/gjson"
)

// readChat is ParseRequest for an OpenAI chat or Ollama chat body (kind
// KindOpenAIChat or KindOllama) in the common case: it gives what
// parseChatRequest gives, or reports false and leaves the body to it. It
// declines what it does not read exactly as gjson does (a member name with
// an escape, a member it reads given twice in one object, an array where
// gjson's paths would look into it) and every body parseChatRequest
// refuses, so that the general path says what is wrong.
//
// gjson reads the conversation two or three times over (the walk of the
// top-level object runs over the messages array to find its end, then the
// walk of the array over each message, then the walk of each message over
// its members); readChat walks each array and object it reads once, in
// place, after the validity check.
func readChat(kind Kind, body []byte) (Request, bool) {
	if checkJSON(body) != nil {
		return Request{}, false
	}
	// One copy of the body: what the request keeps must not share it.
	d := chatDoc{s: string(body), req: Request{Kind: kind}, ollama: kind == KindOllama}
	i := d.space(0)
	if i == len(d.s) || d.s[i] != '{' {
		return Request{}, false
	}
	var top [5]int // where chatMembers' values start, -1 for absent
	_, ok := d.members(i, chatMembers, top[:], func(k, v int) (int, bool) {
		switch {
		case k == 2 && d.s[v] == '[':
			return d.messages(v)
		case k == 3 && d.s[v] == '[':
			return d.tools(v)
		case k == 4:
			end := d.end(v)
			d.req.streamOptions = streamOptionsOf(gjson.Parse(d.s[v:end]))
			return end, true
		case (k == 2 || k == 3) && !d.array(v):
			return 0, false // not an array: the general path says so
		}
		return -1, true
	})
	if !ok {
		return Request{}, false
	}
	if top[0] >= 0 {
		d.req.Model, _ = d.str(top[0])
	}
	switch {
	case d.ollama:
		d.req.Stream = top[1] < 0 || !strings.HasPrefix(d.s[top[1]:], "false")
	default:
		d.req.Stream = top[1] >= 0 && strings.HasPrefix(d.s[top[1]:], "true")
	}
	return d.req, true
}

// chatDoc is a valid JSON document read by readChat, and what it read.
type chatDoc struct {
	s      string
	req    Request
	ollama bool
}

// space returns the offset of the first byte at or after i that is not
// whitespace.
func (d *chatDoc) space(i int) int {
	for i < len(d.s) && (d.s[i] == ' ' || d.s[i] == '\n' || d.s[i] == '\r' || d.s[i] == '\t') {
		i++
	}
	return i
}

// strEnd returns the offset just past the string literal at i: bytewise
// over a short one, such as a member name, then by the next quote.
func (d *chatDoc) strEnd(i int) int {
	j := i + 1
	for stop := min(j+16, len(d.s)); j < stop; j++ {
		switch d.s[j] {
		case '"':
			return j + 1
		case '\\':
			j++ // the escaped byte
		}
	}
	for {
		q := strings.IndexByte(d.s[j:], '"') + j
		k := q
		for k > j && d.s[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 { // not escaped: an even run of backslashes before it
			return q + 1
		}
		j = q + 1
	}
}

// end returns the offset just past the value at i.
func (d *chatDoc) end(i int) int {
	switch d.s[i] {
	case '"':
		return d.strEnd(i)
	case '{', '[':
		depth := 0
		for {
			switch d.s[i] {
			case '"':
				i = d.strEnd(i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for i < len(d.s) {
		switch d.s[i] {
		case ',', '}', ']', ' ', '\n', '\r', '\t':
			return i
		}
		i++
	}
	return i
}

// str returns the value of the string literal at i, unescaped as gjson
// does, and whether there is one.
func (d *chatDoc) str(i int) (string, bool) {
	if d.s[i] != '"' {
		return "", false
	}
	end := d.strEnd(i)
	lit := d.s[i+1 : end-1]
	if strings.IndexByte(lit, '\\') < 0 {
		return lit, true
	}
	if b, ok := d.unquote(i, end); ok {
		return unsafe.String(unsafe.SliceData(b), len(b)), true // b is new and never changed
	}
	return gjson.Parse(d.s[i:end]).Str, true
}

// unquote decodes the literal d.s[i:end] into a new slice when
// jsonvalue.Unquote decodes it as gjson does: valid UTF-8 without a \u
// escape, where the two differ on a lone surrogate.
func (d *chatDoc) unquote(i, end int) ([]byte, bool) {
	lit := d.s[i:end]
	if strings.Contains(lit, `\u`) {
		return nil, false
	}
	return jsonvalue.Unquote(unsafe.Slice(unsafe.StringData(lit), len(lit)))
}

// raw returns a copy of the value at i, as gjson's Raw, or nil for i < 0.
func (d *chatDoc) raw(i int) []byte {
	if i < 0 {
		return nil
	}
	return []byte(d.s[i:d.end(i)])
}

// A walk reads member k of those members looks for, whose value starts
// at v, in place: it returns the offset just past the value, or -1 for the
// caller to skip it, and false to decline the body.
type walk func(k, v int) (end int, ok bool)

// members sets at[k] to where the value of the object's member names[k]
// starts, -1 when it has none, and returns the offset just past the
// object, which starts at i; with walk set, it reads each such value as it
// meets it. It reports false for a member name with an escape, for one of
// names given twice, and when walk does.
func (d *chatDoc) members(i int, names []string, at []int, w walk) (int, bool) {
	for k := range at {
		at[k] = -1
	}
	i = d.space(i + 1)
	if d.s[i] == '}' {
		return i + 1, true
	}
	for {
		ne := d.strEnd(i)
		v := d.space(d.space(ne) + 1) // past the ':'
		end := -1
		if name := d.s[i+1 : ne-1]; strings.IndexByte(name, '\\') >= 0 {
			return 0, false
		} else if k := slices.Index(names, name); k >= 0 {
			if at[k] >= 0 {
				return 0, false
			}
			at[k] = v
			if w != nil {
				var ok bool
				if end, ok = w(k, v); !ok {
					return 0, false
				}
			}
		}
		if end < 0 {
			end = d.end(v)
		}
		i = d.space(end)
		if d.s[i] == '}' {
			return i + 1, true
		}
		i = d.space(i + 1) // past the ','
	}
}

// elements calls fn with the index and offset of each element of the
// array at i; fn returns the offset just past the element, or -1 for
// elements to skip it, and false to stop. It returns the offset just past
// the array, and false if fn did.
func (d *chatDoc) elements(i int, fn func(k, v int) (end int, ok bool)) (int, bool) {
	i = d.space(i + 1)
	if d.s[i] == ']' {
		return i + 1, true
	}
	for k := 0; ; k++ {
		end, ok := fn(k, i)
		if !ok {
			return 0, false
		}
		if end < 0 {
			end = d.end(i)
		}
		i = d.space(end)
		if d.s[i] == ']' {
			return i + 1, true
		}
		i = d.space(i + 1)
	}
}

// array reports whether the member at i, if any, is what arrayValue takes:
// absent, null or an array.
func (d *chatDoc) array(i int) bool {
	return i < 0 || d.s[i] == '[' || d.s[i] == 'n'
}

// messages reads the conversation, the array at at, as parseChatRequest's
// walk of it.
func (d *chatDoc) messages(at int) (int, bool) {
	return d.elements(at, func(i, m int) (int, bool) {
		if d.s[m] != '{' {
			return 0, false // not an object: the general path says so
		}
		p := turnPath("messages", i)
		var ms [6]int
		text := ""
		end, ok := d.members(m, messageMembers, ms[:], func(k, v int) (int, bool) {
			switch {
			case k == 1 && d.s[v] == '[':
				var end int
				var ok bool
				text, end, ok = d.partsText(v)
				return end, ok
			case k == 2 && d.s[v] == '[':
				return d.toolCalls(v, p)
			case k == 2 && !d.array(v):
				return 0, false // not an array: the general path says so
			}
			return -1, true
		})
		if !ok {
			return 0, false
		}
		if ms[1] >= 0 && d.s[ms[1]] == '"' {
			text, _ = d.str(ms[1])
		}
		role := d.strAt(ms[0])
		d.req.addTurn(Turn{Index: i, Role: role, Path: p, Text: text})
		if role == "tool" {
			name := d.strAt(ms[3])
			if d.ollama {
				name = d.strAt(ms[4])
			}
			d.req.ToolResults = append(d.req.ToolResults, ToolResult{
				CallID: d.strAt(ms[5]), Name: name, Content: d.raw(ms[1]), Path: p + ".content",
			})
		}
		return end, true
	})
}

// strAt is strOf of the member at i: its string, or "".
func (d *chatDoc) strAt(i int) string {
	if i < 0 {
		return ""
	}
	s, _ := d.str(i)
	return s
}

// The members read of a tool call, of its function, and of a content part.
var (
	callMembers     = []string{"id", "function"}
	functionMembers = []string{"name", "arguments"}
	partMembers     = []string{"text", "thought", "type"}
	toolMembers     = []string{"function", "name"}
)

// toolCalls reads the calls, the array at at, of the message at path p, as
// parseChatRequest.
func (d *chatDoc) toolCalls(at int, p string) (int, bool) {
	return d.elements(at, func(k, c int) (int, bool) {
		call := ToolCall{Path: p + ".tool_calls." + strconv.Itoa(k)}
		end := -1
		switch d.s[c] {
		case '[':
			return 0, false
		case '{':
			var cm, fm [2]int
			var ok bool
			end, ok = d.members(c, callMembers, cm[:], func(k, f int) (int, bool) {
				switch {
				case k != 1:
				case d.s[f] == '[':
					return 0, false
				case d.s[f] == '{':
					end, ok := d.members(f, functionMembers, fm[:], nil)
					call.Name, call.Arguments = d.strAt(fm[0]), d.arguments(fm[1])
					return end, ok
				}
				return -1, true
			})
			if !ok {
				return 0, false
			}
			call.ID = d.strAt(cm[0])
		}
		if call.Arguments == nil {
			call.Arguments = orEmptyObject(nil)
		}
		d.req.ToolCalls = append(d.req.ToolCalls, call)
		return end, true
	})
}

// arguments is args of the member at i.
func (d *chatDoc) arguments(i int) []byte {
	var b []byte
	switch {
	case i < 0:
	case d.s[i] == '"':
		end := d.strEnd(i)
		var ok bool
		if b, ok = d.unquote(i, end); !ok {
			b = []byte(gjson.Parse(d.s[i:end]).Str) // as str's last resort, without finding the end again
		}
	case d.s[i] == '{' || d.s[i] == '[':
		b = d.raw(i)
	}
	return orEmptyObject(b)
}

// partsText is partsText of the array of parts at i, and the offset just
// past it; false declines an array of parts that holds an array, or a
// part that declines.
func (d *chatDoc) partsText(i int) (string, int, bool) {
	var b strings.Builder
	end, ok := d.elements(i, func(_, e int) (int, bool) {
		switch d.s[e] {
		case '[':
			return 0, false
		case '{':
		default:
			return -1, true
		}
		var pm [3]int
		end, ok := d.members(e, partMembers, pm[:], nil)
		if !ok {
			return 0, false
		}
		t, isStr := "", false
		if pm[0] >= 0 {
			t, isStr = d.str(pm[0])
		}
		if !isStr || pm[1] >= 0 && strings.HasPrefix(d.s[pm[1]:], "true") {
			return end, true
		}
		switch d.strAt(pm[2]) {
		case "", "text", "input_text", "output_text":
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(t)
		}
		return end, true
	})
	return b.String(), end, ok
}

// tools reads the function names offered, the array at at, as toolNamesIn.
func (d *chatDoc) tools(at int) (int, bool) {
	return d.elements(at, func(_, t int) (int, bool) {
		switch d.s[t] {
		case '[':
			return 0, false
		case '{':
		default:
			return -1, true
		}
		name := ""
		var tm, fm [2]int
		end, ok := d.members(t, toolMembers, tm[:], func(k, f int) (int, bool) {
			switch {
			case k != 0:
			case d.s[f] == '[':
				return 0, false
			case d.s[f] == '{':
				end, ok := d.members(f, functionMembers[:1], fm[:1], nil)
				name = d.strAt(fm[0])
				return end, ok
			}
			return -1, true
		})
		if !ok {
			return 0, false
		}
		if name == "" {
			name = d.strAt(tm[1])
		}
		if name != "" {
			d.req.Tools = append(d.req.Tools, name)
		}
		return end, true
	})
}
