package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// ErrNoToolOutput means the answer to a tools/call carries no tool output
// that is one JSON value: it is a JSON-RPC error, or its result has no
// structuredContent and its content is not one text block holding JSON.
var ErrNoToolOutput = errors.New("no JSON tool output")

// isResponse reports whether a JSON-RPC message is a response: a result or
// an error, and no method.
func isResponse(doc []byte) bool {
	r := gjson.GetManyBytes(doc, "method", "result", "error")
	return !r[0].Exists() && (r[1].Exists() || r[2].Exists())
}

// Response finds the JSON-RPC response in the answer to a request: body
// itself when events is nil (an application/json answer), else the message
// on the data line of one SSE event (an MCP server sends one message per
// event; the others are its notifications and requests). It returns the
// message and the index of the event holding it, -1 for a body; ok is
// false when the answer holds no response.
func Response(body []byte, events [][]byte) (msg []byte, event int, ok bool) {
	if events == nil {
		return body, -1, isResponse(body)
	}
	for n, e := range events {
		var found []byte
		mapData(e, func(doc []byte) []byte {
			if found == nil && isResponse(doc) {
				found = doc
			}
			return doc
		})
		if found != nil {
			return found, n, true
		}
	}
	return nil, 0, false
}

// ReplaceResponse returns the answer with the message Response found at
// event replaced by msg: a new body when event is -1, else a copy of events
// whose event keeps its other lines. The input is not modified.
func ReplaceResponse(body []byte, events [][]byte, event int, msg []byte) ([]byte, [][]byte) {
	if event < 0 {
		return msg, events
	}
	out := make([][]byte, len(events))
	copy(out, events)
	done := false
	out[event] = mapData(events[event], func(doc []byte) []byte {
		if !done && isResponse(doc) {
			done = true
			return msg
		}
		return doc
	})
	return body, out
}

// ToolOutput reads the response to a tools/call: the tool's output as raw
// JSON, the gjson path it was read from, and whether the result is flagged
// isError. The output is result.structuredContent when present, else the
// text of the result's one content block when that block is text holding
// JSON. When both are present and the text holds JSON, they must be the
// same JSON value. Anything else is an error wrapping ErrNoToolOutput that
// says why.
func ToolOutput(msg []byte) (output []byte, at string, isError bool, err error) {
	r := gjson.GetManyBytes(msg, "error.message", "result", "result.structuredContent", "result.content", "result.isError")
	switch {
	case !r[1].Exists() && r[0].Exists():
		return nil, "error", false, fmt.Errorf("%w: the answer is a JSON-RPC error: %s", ErrNoToolOutput, shown(r[0]))
	case !r[1].IsObject():
		return nil, "result", false, fmt.Errorf("%w: the answer has no result object", ErrNoToolOutput)
	}
	isError = r[4].Bool()
	text, textJSON := oneText(r[3])
	switch {
	case r[2].Exists() && r[2].Type != gjson.Null:
		if textJSON && !equalJSON(text, []byte(r[2].Raw)) {
			return nil, "result.content.0.text", isError, fmt.Errorf("%w: the text content and structuredContent differ", ErrNoToolOutput)
		}
		return []byte(r[2].Raw), "result.structuredContent", isError, nil
	case textJSON:
		return text, "result.content.0.text", isError, nil
	case text != nil:
		return nil, "result.content.0.text", isError, fmt.Errorf("%w: the text content is not JSON: %s", ErrNoToolOutput, shorten(text))
	default:
		return nil, "result.content", isError, fmt.Errorf("%w: the content is not one text block", ErrNoToolOutput)
	}
}

// SetToolOutput returns the response to a tools/call with its tool output
// (see ToolOutput) set to output, raw JSON: structuredContent when the
// result has one, and the text of its one text block when that text held
// JSON. msg is not modified.
func SetToolOutput(msg, output []byte) ([]byte, error) {
	r := gjson.GetManyBytes(msg, "result.structuredContent", "result.content")
	out := bytes.Clone(msg)
	var err error
	if r[0].Exists() && r[0].Type != gjson.Null {
		if out, err = sjson.SetRawBytes(out, "result.structuredContent", output); err != nil {
			return nil, fmt.Errorf("result.structuredContent: %w", err)
		}
	}
	if _, textJSON := oneText(r[1]); textJSON {
		if out, err = sjson.SetBytes(out, "result.content.0.text", string(output)); err != nil {
			return nil, fmt.Errorf("result.content.0.text: %w", err)
		}
	}
	return out, nil
}

// oneText is the text of content that is one text block, and whether that
// text is JSON; nil when content is anything else.
func oneText(content gjson.Result) (text []byte, isJSON bool) {
	blocks := content.Array()
	if !content.IsArray() || len(blocks) != 1 || blocks[0].Get("type").Str != "text" {
		return nil, false
	}
	t := blocks[0].Get("text")
	if t.Type != gjson.String {
		return nil, false
	}
	text = []byte(t.Str)
	return text, gjson.ValidBytes(text) && len(bytes.TrimSpace(text)) > 0
}

// equalJSON reports whether two JSON documents are the same value, key
// order and whitespace aside.
func equalJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
