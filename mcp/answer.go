package mcp

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmproxy/llmproxy/wire"
)

// Result is the answer to a tools/call as a page shows it.
type Result struct {
	// Text is the text of the result's text content blocks, joined by
	// newlines.
	Text string
	// Structured is the result's structuredContent as raw JSON; nil when
	// it has none.
	Structured []byte
	// Other names, in order, the types of the content blocks that are not
	// text ("image", "audio", "resource_link", "resource", …).
	Other []string
	// IsError is the result's isError (the tool failed), or set for a
	// JSON-RPC error answer, which Error then says ("code: message").
	IsError bool
	Error   string
}

// Answer finds the JSON-RPC response in a recorded answer to a request:
// the body itself when it is not streamed (framing wire.FramingNone), or
// the data of the first SSE event that is a response (a message with an
// id and a result or an error, and no method). The server's own requests
// and notifications in the stream are passed over. ok is false when there
// is no response in the answer (a notification's 202, a stream cut short,
// bytes that are not JSON).
func Answer(f wire.Framing, body []byte) (msg []byte, ok bool) {
	if f == wire.FramingNone {
		return body, isResponse(body)
	}
	for _, e := range wire.Split(f, body) {
		if isResponse(e.Data) {
			return e.Data, true
		}
	}
	return nil, false
}

// ReadToolResult reads a response to tools/call (see Answer): its result's
// content blocks and structured content, or its JSON-RPC error.
func ReadToolResult(msg []byte) Result {
	r := gjson.GetManyBytes(msg, "result.content", "result.structuredContent", "result.isError", "error.code", "error.message")
	var out Result
	if r[3].Exists() || r[4].Exists() {
		out.IsError = true
		out.Error = fmt.Sprintf("%s: %s", r[3].Raw, r[4].String())
		return out
	}
	var texts []string
	r[0].ForEach(func(_, block gjson.Result) bool {
		typ := block.Get("type").String()
		if typ == "text" {
			texts = append(texts, block.Get("text").String())
		} else {
			out.Other = append(out.Other, typ)
		}
		return true
	})
	out.Text = strings.Join(texts, "\n")
	if r[1].Exists() {
		out.Structured = bytes.Clone([]byte(r[1].Raw))
	}
	out.IsError = r[2].Bool()
	return out
}

// ListedTools is the names of the tools a tools/list response (see Answer)
// lists, in order.
func ListedTools(msg []byte) []string {
	var names []string
	gjson.GetBytes(msg, "result.tools").ForEach(func(_, t gjson.Result) bool {
		names = append(names, t.Get("name").String())
		return true
	})
	return names
}

// Method is the JSON-RPC method of a request or notification; "" for a
// response or for bytes that are not a JSON-RPC message.
func Method(body []byte) string {
	m, err := Parse(body)
	if err != nil {
		return ""
	}
	return m.Method
}

// ServerTool is how pages name a tool of the MCP server whose traffic is
// recorded under upstream ("mcp/NAME", see proxy.MCPPrefix): "NAME/TOOL";
// the tool's name alone for any other upstream.
func ServerTool(upstream, tool string) string {
	name, ok := strings.CutPrefix(upstream, "mcp/")
	if !ok || name == "" {
		return tool
	}
	return name + "/" + tool
}

// Params is a request's or notification's params as raw JSON, without
// params._meta (protocol metadata, which matching leaves out too); nil when
// there are none beside it.
func Params(body []byte) []byte {
	p := gjson.GetBytes(body, "params")
	if !p.IsObject() {
		return nil
	}
	out := []byte(p.Raw)
	if p.Get("_meta").Exists() {
		if d, err := sjson.DeleteBytes(out, "_meta"); err == nil {
			out = d
		}
	}
	if string(bytes.TrimSpace(out)) == "{}" {
		return nil
	}
	return bytes.Clone(out)
}

// ResultValue is a response's result as raw JSON; nil when it has none.
func ResultValue(msg []byte) []byte {
	r := gjson.GetBytes(msg, "result")
	if !r.Exists() {
		return nil
	}
	return bytes.Clone([]byte(r.Raw))
}
