package review

import (
	"fmt"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
	"github.com/llmproxy/llmproxy/wire"
)

// Difference is one change between a turn of OLD and its turn in NEW.
type Difference struct {
	Class Class `json:"class"`
	// What says what changed, in a reviewer's words: "prompt", "tools
	// offered", "parameters", "endpoint", "tool call added", "tool call
	// removed", "tool call renamed", "arguments", "finish reason",
	// "structured output", "error instead of an answer", "answer instead
	// of an error", "status", "answer body", "unreadable answer", "text",
	// "reasoning", "error message".
	What string `json:"what"`
	// Path is where: "request.<gjson path in the request body>" for the
	// request side, "response.<neutral path>" for the answer
	// ("response.tool_calls.0.arguments.city", "response.text",
	// "response.output.<path>" inside a structured output).
	Path string `json:"path"`
	// Old and New are the values there, shortened; "" when absent.
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
}

// valueLimit is how many runes of a value a difference shows.
const valueLimit = 120

// differences lists what differs between two readings, request side
// first, then behaviour, then wording.
func differences(o, n *reading) []Difference {
	var out []Difference
	add := func(c Class, what, path, old, new string) {
		out = append(out, Difference{Class: c, What: what, Path: path, Old: short(old, valueLimit), New: short(new, valueLimit)})
	}
	if o.route != n.route {
		add(Request, "endpoint", "request", o.route, n.route)
	}
	if string(o.request) != string(n.request) {
		jsonDiffs(o.request, n.request, o.reqJSON && n.reqJSON, func(p, ov, nv string) {
			add(Request, wire.Part(n.kind, p), join("request", p), ov, nv)
		})
	}
	switch {
	case o.failed && !n.failed:
		add(Behaviour, "answer instead of an error", "response.error", o.errMsg, "")
	case !o.failed && n.failed:
		add(Behaviour, "error instead of an answer", "response.error", "", n.errMsg)
	case o.failed && n.failed && o.status != n.status:
		add(Behaviour, "status", "response.status", strconv.Itoa(o.status), strconv.Itoa(n.status))
	}
	if o.unreadable != n.unreadable {
		add(Behaviour, "unreadable answer", "response", o.unreadable, n.unreadable)
	}
	if !o.chat || !n.chat {
		if string(o.body) != string(n.body) {
			jsonDiffs(o.body, n.body, o.bodyJSON && n.bodyJSON, func(p, ov, nv string) {
				add(Behaviour, "answer body", join("response.body", p), ov, nv)
			})
		}
		return out
	}
	out = append(out, callDiffs(o.calls, n.calls)...)
	if o.finish != n.finish {
		add(Behaviour, "finish reason", "response.finish", o.finish, n.finish)
	}
	out = append(out, structuredDiffs(o.structured, n.structured)...)
	if o.text != n.text {
		add(Wording, "text", "response.text", o.text, n.text)
	}
	if o.reasoning != n.reasoning {
		add(Wording, "reasoning", "response.reasoning", o.reasoning, n.reasoning)
	}
	if o.failed && n.failed && o.errMsg != n.errMsg {
		add(Wording, "error message", "response.error", o.errMsg, n.errMsg)
	}
	return out
}

// callDiffs compares tool calls by position: added, removed, renamed, or
// their arguments by path.
func callDiffs(o, n []call) []Difference {
	var out []Difference
	for k := range max(len(o), len(n)) {
		at := "response.tool_calls." + strconv.Itoa(k)
		switch {
		case k >= len(o):
			out = append(out, Difference{Class: Behaviour, What: "tool call added", Path: at, New: label(n[k])})
		case k >= len(n):
			out = append(out, Difference{Class: Behaviour, What: "tool call removed", Path: at, Old: label(o[k])})
		case o[k].name != n[k].name:
			out = append(out, Difference{Class: Behaviour, What: "tool call renamed", Path: at + ".name", Old: o[k].name, New: n[k].name})
		case string(o[k].args) != string(n[k].args):
			jsonDiffs(o[k].args, n[k].args, o[k].isJSON && n[k].isJSON, func(p, ov, nv string) {
				out = append(out, Difference{Class: Behaviour, What: "arguments", Path: join(at+".arguments", p),
					Old: short(ov, valueLimit), New: short(nv, valueLimit)})
			})
		}
	}
	return out
}

func label(c call) string { return short(c.name+string(c.args), valueLimit) }

// structuredDiffs compares structured outputs by path: a string that
// changed is wording, anything else (a member added or removed, a type, a
// number, a boolean, an array's length) behaviour; an output present on
// one side only is behaviour.
func structuredDiffs(o, n []byte) []Difference {
	const at = "response.output"
	var out []Difference
	switch {
	case string(o) == string(n):
	case o == nil || n == nil:
		out = append(out, Difference{Class: Behaviour, What: "structured output", Path: at,
			Old: short(string(o), valueLimit), New: short(string(n), valueLimit)})
	default:
		jsonvalue.Ignore(nil).Diff(jsonOf(n), jsonOf(o), func(d jsonvalue.Difference) bool {
			c, what := Behaviour, "structured output"
			if len(d.Got) == 1 && len(d.Want) == 1 && d.Got[0].Type == d.Want[0].Type && d.Got[0].Type == gjson.String {
				c, what = Wording, "structured output text"
			}
			out = append(out, Difference{Class: c, What: what, Path: join(at, jsonvalue.Path(d.Path)),
				Old: short(values(d.Want), valueLimit), New: short(values(d.Got), valueLimit)})
			return true
		})
	}
	return out
}

// jsonDiffs calls fn with each differing path (gjson syntax, "" for the
// root) and the old and new values there, of two canonical JSON
// documents, or once at the root when they are not both JSON.
func jsonDiffs(o, n []byte, isJSON bool, fn func(path, old, new string)) {
	if !isJSON {
		fn("", string(o), string(n))
		return
	}
	jsonvalue.Ignore(nil).Diff(jsonOf(n), jsonOf(o), func(d jsonvalue.Difference) bool {
		fn(jsonvalue.Path(d.Path), values(d.Want), values(d.Got))
		return true
	})
}

// values shows the values at a path: a string's content, other JSON as
// written; several (a repeated member) one after the other.
func values(vs []gjson.Result) string {
	s := ""
	for k, v := range vs {
		if k > 0 {
			s += ", "
		}
		if v.Type == gjson.String {
			s += v.Str
		} else {
			s += v.Raw
		}
	}
	return s
}

// join appends a gjson path to a prefix.
func join(prefix, path string) string {
	if path == "" {
		return prefix
	}
	return fmt.Sprintf("%s.%s", prefix, path)
}
