package mcp_test

import (
	"slices"
	"testing"

	"github.com/llmproxy/llmproxy/mcp"
	"github.com/llmproxy/llmproxy/wire"
)

func TestAnswerAndToolResult(t *testing.T) {
	const result = `{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"wrote 5 bytes"},{"type":"image","data":"AA==","mimeType":"image/png"},{"type":"text","text":"to a.txt"}],"structuredContent":{"bytes":5},"isError":false}}`
	for _, tc := range []struct {
		name    string
		framing wire.Framing
		body    string
		ok      bool
		want    mcp.Result
	}{
		{name: "JSON", framing: wire.FramingNone, body: result, ok: true,
			want: mcp.Result{Text: "wrote 5 bytes\nto a.txt", Structured: []byte(`{"bytes":5}`), Other: []string{"image"}}},
		{name: "SSE after a progress notification", framing: wire.FramingSSE, ok: true,
			body: "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n" +
				"event: message\nid: 2\ndata: " + result + "\n\n",
			want: mcp.Result{Text: "wrote 5 bytes\nto a.txt", Structured: []byte(`{"bytes":5}`), Other: []string{"image"}}},
		{name: "tool error", framing: wire.FramingNone, ok: true,
			body: `{"jsonrpc":"2.0","id":"x","result":{"content":[{"type":"text","text":"no such file"}],"isError":true}}`,
			want: mcp.Result{Text: "no such file", IsError: true}},
		{name: "JSON-RPC error", framing: wire.FramingNone, ok: true,
			body: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool \"nope\""}}`,
			want: mcp.Result{IsError: true, Error: `-32602: unknown tool "nope"`}},
		{name: "a notification's empty 202", framing: wire.FramingNone, body: ``},
		{name: "not JSON", framing: wire.FramingNone, body: `<html>502</html>`},
		{name: "a request, not a response", framing: wire.FramingNone, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{name: "a stream cut before the response", framing: wire.FramingSSE,
			body: "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"res"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, ok := mcp.Answer(tc.framing, []byte(tc.body))
			if ok != tc.ok {
				t.Fatalf("Answer found a response: %v, want %v (%s)", ok, tc.ok, msg)
			}
			if !ok {
				return
			}
			got := mcp.ReadToolResult(msg)
			if got.Text != tc.want.Text || string(got.Structured) != string(tc.want.Structured) || !slices.Equal(got.Other, tc.want.Other) ||
				got.IsError != tc.want.IsError || got.Error != tc.want.Error {
				t.Errorf("ReadToolResult = %+v (structured %s), want %+v (structured %s)", got, got.Structured, tc.want, tc.want.Structured)
			}
		})
	}
}

func TestListedToolsParamsMethod(t *testing.T) {
	list := []byte(`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo","inputSchema":{}},{"name":"write_note","inputSchema":{}}]}}`)
	if got := mcp.ListedTools(list); !slices.Equal(got, []string{"echo", "write_note"}) {
		t.Errorf("ListedTools = %q", got)
	}
	if got := mcp.ListedTools([]byte(`{"jsonrpc":"2.0","id":2,"result":{}}`)); got != nil {
		t.Errorf("ListedTools of no tools = %q", got)
	}
	for body, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"_meta":{"progressToken":1},"clientInfo":{"name":"c"}}}`: `{"clientInfo":{"name":"c"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`:                                              ``,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":1}}}`:                                             ``,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`:                                                                        ``,
	} {
		if got := string(mcp.Params([]byte(body))); got != want {
			t.Errorf("Params(%s) = %s, want %s", body, got, want)
		}
	}
	for body, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`: "tools/list",
		`{"jsonrpc":"2.0","id":1,"result":{}}`:           "",
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`:     "",
		`not json`: "",
	} {
		if got := mcp.Method([]byte(body)); got != want {
			t.Errorf("Method(%s) = %q, want %q", body, got, want)
		}
	}
	for _, tc := range []struct{ upstream, tool, want string }{
		{"mcp/notes", "write_note", "notes/write_note"},
		{"openai", "weather", "weather"},
		{"mcp/", "x", "x"},
	} {
		if got := mcp.ServerTool(tc.upstream, tc.tool); got != tc.want {
			t.Errorf("ServerTool(%q, %q) = %q, want %q", tc.upstream, tc.tool, got, tc.want)
		}
	}
}
