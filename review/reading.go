package review

import (
	"bytes"
	"cmp"
	"hash/maphash"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/jsonvalue"
	"github.com/llmproxy/llmproxy/wire"
)

// reading is what of one interaction the review compares, in
// provider-neutral terms.
type reading struct {
	kind wire.Kind
	chat bool // read as a chat request and answer
	req  wire.Request

	// The request side.
	route   string // METHOD path?query, as the proxy shows it
	request []byte // the body, echoes masked, canonical when it is JSON
	reqJSON bool

	// The behaviour.
	status     int
	failed     bool // an error instead of an answer
	calls      []call
	finish     string
	structured []byte // the answer's structured output, canonical; nil when it has none
	body       []byte // not a chat: the answer's body, canonical when it is JSON
	bodyJSON   bool
	unreadable string // why the answer could not be read
	responseID string // a Responses answer's id

	// The wording.
	text, reasoning, errMsg string
}

// call is one tool call the answer made.
type call struct {
	name   string
	args   []byte // canonical when isJSON, else as sent
	isJSON bool
}

// read reads an interaction. It never fails: what it cannot read as a
// provider's body it compares as bytes.
func read(i *cassette.Interaction) *reading {
	r := &reading{kind: wire.Kind(i.Kind), status: i.Response.Status}
	body := r.readRequest(i)
	resp := i.Response.Bytes()
	if !r.chat {
		r.body, r.bodyJSON = canonical(resp)
		r.failed = r.status >= 400
		return r
	}
	r.readAnswer(i.Response.WireFraming(), resp, body)
	return r
}

// readRequest reads the route and the request, its echoes masked when it
// is a chat request wire reads, and returns the body.
func (r *reading) readRequest(i *cassette.Interaction) []byte {
	r.route = i.Request.Method + " " + cassette.ProxyPath(i.Upstream, i.Request.Path)
	path := i.Request.Path
	if i.Request.Query != "" {
		r.route += "?" + i.Request.Query
		path += "?" + i.Request.Query
	}
	body := []byte(i.Request.Body)
	r.request, r.reqJSON = canonical(body)
	if r.kind.CallsTools() {
		if req, err := wire.ParseRequest(r.kind, path, body); err == nil {
			r.chat, r.req = true, req
			if masked, err := req.MaskEchoes(body); err == nil {
				r.request, r.reqJSON = canonical(masked)
			}
		}
	}
	return body
}

// readAnswer reads a chat answer: an error, or its calls, finish reason,
// reasoning and text (or structured output, as the request reqBody asks).
func (r *reading) readAnswer(f wire.Framing, resp, reqBody []byte) {
	a, err := wire.ParseResponse(r.kind, f, resp)
	switch {
	case r.status >= 400:
		r.failed, r.errMsg = true, cmp.Or(wire.ErrorMessage(resp), string(resp))
		return
	case err != nil:
		r.unreadable = err.Error()
		return
	case a.Error != "":
		r.failed, r.errMsg = true, a.Error
	}
	r.finish, r.reasoning, r.responseID = string(a.Finish), a.Reasoning, a.ResponseID
	for _, tc := range a.ToolCalls {
		args, ok := canonical(tc.Arguments)
		r.calls = append(r.calls, call{name: tc.Name, args: args, isJSON: ok})
	}
	if s, ok := structuredOutput(r.kind, reqBody, a.Text); ok {
		r.structured = s
	} else {
		r.text = a.Text
	}
}

// structuredOutput is an answer's text as a structured output, canonical:
// when the request asked for a JSON value as the text (wire.OutputOf), or
// the text is a JSON object or array (JSON mode).
func structuredOutput(kind wire.Kind, reqBody []byte, text string) ([]byte, bool) {
	t := strings.TrimSpace(text)
	out, err := wire.OutputOf(kind, reqBody)
	asked := err == nil && out.Schema != nil && out.Tool == ""
	if !asked && !(strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) {
		return nil, false
	}
	c, ok := canonical([]byte(t))
	return c, ok
}

// canonical is a body's canonical JSON (jsonvalue), and true; or the body
// itself, and false, when it is not JSON.
func canonical(b []byte) ([]byte, bool) {
	if len(bytes.TrimSpace(b)) == 0 {
		return b, false
	}
	c, err := jsonvalue.Canonical(b)
	if err != nil {
		return b, false
	}
	return c, true
}

// firstUser is the conversation's opening as a key: its first user turn,
// compacted, or the whole canonical request when it has none.
func (r *reading) firstUser() []byte {
	if r.chat {
		for _, t := range r.req.Turns {
			if t.Role == "user" {
				raw := t.Raw(r.request) // turns keep their paths in the masked, canonical body
				if c, ok := canonical(raw); ok {
					return c
				}
				return raw
			}
		}
	}
	return r.request
}

// setup is the opening request without its first user turn: what a
// conversation was begun with besides its prompt (system prompt, tools
// offered, parameters).
func (r *reading) setup() []byte {
	if r.chat && r.reqJSON {
		for _, t := range r.req.Turns {
			if t.Role != "user" {
				continue
			}
			if p, ok := jsonvalue.ParsePattern(t.Path); ok {
				if b, err := (jsonvalue.Ignore{p}).AppendCanonical(nil, jsonOf(r.request)); err == nil {
					return b
				}
			}
			break
		}
	}
	return r.request
}

// title is a line naming the conversation: its first user text, else its
// route.
func (r *reading) title() string {
	if r.chat {
		for _, t := range r.req.Turns {
			if t.Role == "user" && t.Text != "" {
				return t.Text
			}
		}
	}
	return r.route
}

// digest hashes everything the review compares, so that two readings with
// the same digest (under one seed) have no difference.
func (r *reading) digest(seed maphash.Seed) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	field := func(b []byte) {
		var n [8]byte
		for i, l := 0, uint64(len(b)); i < 8; i++ {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write(b)
	}
	flag := func(b bool) {
		if b {
			field([]byte{1})
		} else {
			field(nil)
		}
	}
	field([]byte(r.kind))
	field([]byte(r.route))
	field(r.request)
	flag(r.chat)
	flag(r.failed)
	field([]byte(r.finish))
	field([]byte(r.unreadable))
	field(r.structured)
	flag(r.structured != nil)
	field(r.body)
	field([]byte(r.text))
	field([]byte(r.reasoning))
	field([]byte(r.errMsg))
	if r.failed {
		var s [8]byte
		for i := range s {
			s[i] = byte(uint64(r.status) >> (8 * i))
		}
		field(s[:])
	}
	for _, c := range r.calls {
		field([]byte(c.name))
		field(c.args)
	}
	return h.Sum64()
}

// jsonOf parses canonical JSON for jsonvalue's differ.
func jsonOf(b []byte) gjson.Result { return gjson.ParseBytes(b) }

// short cuts a value shown in a difference at limit runes.
func short(s string, limit int) string {
	n := 0
	for i := range s {
		if n == limit {
			return s[:i] + "…"
		}
		n++
	}
	return s
}
