package mcp

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmproxy/llmproxy/wire"
)

// JSON-RPC error codes llmproxy answers with.
const (
	CodeParseError     = wire.JSONRPCParseError     // the body is not JSON
	CodeInvalidRequest = wire.JSONRPCInvalidRequest // JSON, but not one JSON-RPC message
	CodeInternalError  = wire.JSONRPCInternalError  // the proxy failed (a cassette error, an upstream failure)
	// CodeCassetteMiss is a request the cassette has no answer for; its
	// error's data says why (see ErrorBody).
	CodeCassetteMiss = -32001
)

// Sentinel errors of Parse.
var (
	// ErrMalformed is a body that is not one JSON value.
	ErrMalformed = errors.New("not valid JSON")
	// ErrBatch is a JSON-RPC batch (an array), which MCP does not allow
	// since protocol version 2025-06-18 and llmproxy does not carry.
	ErrBatch = errors.New("a JSON-RPC batch (array); MCP sends one message per request")
	// ErrNotJSONRPC is a JSON value that is not a JSON-RPC 2.0 message.
	ErrNotJSONRPC = errors.New("not a JSON-RPC 2.0 message")
)

// Message is what llmproxy reads of a JSON-RPC message. Its byte slices
// share memory with the body it was read from.
type Message struct {
	// ID is the id as raw JSON; nil for a notification.
	ID []byte
	// Method is the request's or notification's method; "" for a response.
	Method string
	// ProgressToken is params._meta.progressToken as raw JSON, nil if absent.
	ProgressToken []byte
}

// Notification reports whether m expects no answer: a notification, or a
// response to a request the server sent.
func (m Message) Notification() bool { return m.ID == nil || m.Method == "" }

// Parse reads one JSON-RPC 2.0 message. An error wraps ErrMalformed,
// ErrBatch or ErrNotJSONRPC and says what is wrong.
func Parse(body []byte) (Message, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return Message{}, ErrBatch
	}
	if !gjson.ValidBytes(trimmed) {
		return Message{}, ErrMalformed
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Message{}, fmt.Errorf("%w: the body is not a JSON object", ErrNotJSONRPC)
	}
	r := gjson.GetManyBytes(trimmed, "jsonrpc", "id", "method", "params._meta.progressToken", "result", "error")
	if r[0].String() != "2.0" {
		return Message{}, fmt.Errorf("%w: jsonrpc is %s, not \"2.0\"", ErrNotJSONRPC, shown(r[0]))
	}
	var m Message
	if r[1].Exists() {
		if t := r[1].Type; t != gjson.String && t != gjson.Number && t != gjson.Null {
			return Message{}, fmt.Errorf("%w: id is %s, neither a string nor a number", ErrNotJSONRPC, shown(r[1]))
		}
		m.ID = rawOf(trimmed, r[1])
	}
	switch {
	case r[2].Exists() && r[2].Type != gjson.String:
		return Message{}, fmt.Errorf("%w: method is %s, not a string", ErrNotJSONRPC, shown(r[2]))
	case r[2].Exists():
		m.Method = r[2].Str
	case !r[4].Exists() && !r[5].Exists():
		return Message{}, fmt.Errorf("%w: it has no method, result or error", ErrNotJSONRPC)
	}
	if r[3].Exists() {
		m.ProgressToken = rawOf(trimmed, r[3])
	}
	return m, nil
}

// rawOf is a value's raw JSON as a slice of the document it was read from.
func rawOf(doc []byte, r gjson.Result) []byte {
	if r.Index > 0 && r.Index+len(r.Raw) <= len(doc) {
		return doc[r.Index : r.Index+len(r.Raw) : r.Index+len(r.Raw)]
	}
	return []byte(r.Raw)
}

// shown is a JSON value as an error message shows it, shortened.
func shown(r gjson.Result) string {
	if !r.Exists() {
		return "absent"
	}
	s := r.Raw
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// IgnorePaths are the body paths of a JSON-RPC message that matching never
// compares, because they differ from run to run: the id, and params._meta,
// the protocol's metadata beside a request's parameters, which holds the
// progress token (and, from the SDKs, client details). The session id and
// protocol version travel in headers, which are not compared unless
// configured.
func IgnorePaths() []string { return []string{"id", "params._meta"} }

// Rewrite returns a recorded message as the answer to the live request:
// a response gets the live id, and a progress notification the live
// progress token. A message that needs neither, or is not a JSON object, is
// returned as it is (sharing memory with doc).
func Rewrite(doc, id, token []byte) []byte {
	r := gjson.GetManyBytes(doc, "method", "id", "params.progressToken")
	switch {
	case !r[0].Exists() && r[1].Exists() && id != nil && r[1].Raw != string(id):
		if out, err := sjson.SetRawBytes(doc, "id", id); err == nil {
			return out
		}
	case r[0].Str == "notifications/progress" && r[2].Exists() && token != nil && r[2].Raw != string(token):
		if out, err := sjson.SetRawBytes(doc, "params.progressToken", token); err == nil {
			return out
		}
	}
	return doc
}

// RewriteEvent is Rewrite on each data line of an SSE event (an MCP server
// sends one message per event, on one data line). Lines that are not data,
// and data that is no JSON object, are kept as they are.
func RewriteEvent(event, id, token []byte) []byte {
	return mapData(event, func(doc []byte) []byte { return Rewrite(doc, id, token) })
}

// mapData returns an SSE event with f applied to the message on each of
// its data lines; the other lines, and each line's spacing and ending, are
// kept. An event with no data line is returned as it is.
func mapData(event []byte, f func(doc []byte) []byte) []byte {
	if !bytes.Contains(event, []byte("data:")) {
		return event
	}
	out := make([]byte, 0, len(event)+16)
	rest := event
	for len(rest) > 0 {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			out = append(out, line...)
			continue
		}
		body := bytes.TrimRight(data, "\r\n")
		end := data[len(body):]
		lead := len(body) - len(bytes.TrimLeft(body, " "))
		out = append(out, "data:"...)
		out = append(out, body[:lead]...)
		out = append(out, f(body[lead:])...)
		out = append(out, end...)
	}
	return out
}

// ErrorBody is a JSON-RPC error response to the request whose id is id
// (raw JSON; nil writes null), with code, message and, when data is not
// nil, data (raw JSON): wire.JSONRPCError.
var ErrorBody = wire.JSONRPCError

// ToolCall reads a tools/call request: the tool's name, its arguments (raw
// JSON, "{}" when absent) and the request's id (raw JSON). ok is false for
// any other message.
func ToolCall(body []byte) (name string, args, id []byte, ok bool) {
	r := gjson.GetManyBytes(body, "method", "params.name", "params.arguments", "id")
	if r[0].Str != "tools/call" || r[1].Type != gjson.String {
		return "", nil, nil, false
	}
	args = []byte("{}")
	if r[2].Exists() {
		args = []byte(r[2].Raw)
	}
	return r[1].Str, args, []byte(r[3].Raw), true
}
