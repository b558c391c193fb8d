package view

import (
	"strings"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/mcp"
)

// mcpClientRole labels the agent's side of an MCP interaction on its page;
// the other side is "MCP server NAME".
const mcpClientRole = "MCP client"

// mcpTurns shows an MCP interaction as the tool traffic it is, beside the
// model's turns: a tools/call as the agent's call of SERVER/TOOL with its
// arguments, answered by the server's result (its text, structured content
// and other content blocks, or its error); any other message as its method
// and parameters, answered by its result (for tools/list, the tools'
// names). resp is nil when the answer holds no JSON-RPC response, and note
// then says so for a notification (answered 202 with nothing).
func mcpTurns(i *cassette.Interaction) (req []message, resp *message, note string) {
	server := "MCP server " + strings.TrimPrefix(i.Upstream, "mcp/")
	sent, err := mcp.Parse(i.Request.Body)
	answer, answered := mcp.Answer(i.Response.WireFraming(), i.Response.Bytes())
	if name, args, _, ok := mcp.ToolCall(i.Request.Body); ok {
		tool := mcp.ServerTool(i.Upstream, name)
		req = []message{{Role: mcpClientRole, Class: "assistant", Path: sent.Method, Calls: []toolCall{{Name: tool, Arguments: pretty(args)}}}}
		if answered {
			resp = mcpToolAnswer(server, tool, answer)
		}
		return req, resp, ""
	}
	m := message{Role: mcpClientRole, Class: "other", Path: sent.Method}
	switch {
	case err != nil:
		m.Text = "(not one JSON-RPC message: " + err.Error() + ")"
	case sent.Method == "":
		m.Text = "(a response to the server's own request)"
	default:
		if params := mcp.Params(i.Request.Body); params != nil {
			m.Text = pretty(params)
		}
	}
	req = []message{m}
	if !answered {
		if err == nil && sent.Notification() {
			note = "A notification: the server accepted it and answers nothing."
		}
		return req, nil, note
	}
	a := message{Role: server, Class: "tool", Path: "result"}
	switch r := mcp.ReadToolResult(answer); {
	case r.Error != "":
		a.Error = r.Error
	case sent.Method == "tools/list":
		a.Text = "tools: " + strings.Join(mcp.ListedTools(answer), ", ")
	default:
		a.Text = pretty(mcp.ResultValue(answer))
	}
	return req, &a, ""
}

// mcpToolAnswer is the server's answer to a tools/call of tool: its result,
// or the JSON-RPC error it gave instead.
func mcpToolAnswer(server, tool string, answer []byte) *message {
	r := mcp.ReadToolResult(answer)
	m := message{Role: server, Class: "tool", Path: "result", Error: r.Error}
	if r.Error == "" {
		m.Results = []toolResult{{Name: tool, Content: resultOf(r), IsError: r.IsError}}
		m.Other = r.Other
	}
	return &m
}

// resultOf is a tool result as its section shows it: the text (indented
// when it is JSON), then the structured content when the text does not
// already say it.
func resultOf(r mcp.Result) string {
	text := r.Text
	if t := strings.TrimSpace(text); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		text = pretty([]byte(t))
	}
	if r.Structured == nil {
		return text
	}
	structured := pretty(r.Structured)
	switch text {
	case structured:
		return text
	case "":
		return structured
	}
	return text + "\n\nstructured content:\n" + structured
}

// readMCP fills in a row of an MCP interaction: a tools/call lists its
// tool as SERVER/TOOL among the tool calls, and the filter searches the
// JSON-RPC method, the tool and its result's text.
func (r *row) readMCP(i *cassette.Interaction, add func(string)) {
	add(mcp.Method(i.Request.Body))
	name, _, _, ok := mcp.ToolCall(i.Request.Body)
	if !ok {
		return
	}
	tool := mcp.ServerTool(i.Upstream, name)
	r.Tools = append(r.Tools, tool)
	add(tool)
	if answer, ok := mcp.Answer(i.Response.WireFraming(), i.Response.Bytes()); ok {
		res := mcp.ReadToolResult(answer)
		add(res.Text)
		add(res.Error)
	}
}

// mcpCalls names the tool calls of an MCP log entry as SERVER/TOOL, in a
// new slice (the entry's is shared with the log).
func mcpCalls(upstream string, calls []cassette.ToolCall) []cassette.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]cassette.ToolCall, len(calls))
	for k, c := range calls {
		c.Name = mcp.ServerTool(upstream, c.Name)
		out[k] = c
	}
	return out
}
