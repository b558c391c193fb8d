package view_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/view"
)

// mcpInteraction is an MCP interaction with the server notes: a request
// body and its answer, as JSON or as one SSE event.
func mcpInteraction(req, answer string, sse bool) *cassette.Interaction {
	i := &cassette.Interaction{Upstream: "mcp/notes", Kind: "mcp",
		Request:  cassette.Request{Method: "POST", Path: "/", Body: []byte(req), Headers: http.Header{"Content-Type": {"application/json"}}},
		Response: cassette.Response{Status: 200, Headers: http.Header{"Content-Type": {"application/json"}}, Body: []byte(answer)}}
	switch {
	case answer == "":
		i.Response.Status, i.Response.Headers = 202, nil
	case sse:
		i.Response.Body, i.Response.Framing = nil, "sse"
		i.Response.Headers.Set("Content-Type", "text/event-stream")
		i.Response.Events = []cassette.Event{{AtMillis: 1, Data: []byte("event: message\ndata: " + answer + "\n\n")}}
	}
	return i
}

// toolCall is a tools/call request of the notes server's tool with args.
func toolCall(id int, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"_meta":{"progressToken":%d},"name":%q,"arguments":%s}}`, id, id, tool, args)
}

// TestMCPPages: an MCP tools/call reads as the agent's call of SERVER/TOOL
// with its arguments and the server's result beside the model's turn that
// asked for it; a tool error, a JSON-RPC error, other content blocks, a
// notification and hostile arguments and results each show as such.
func TestMCPPages(t *testing.T) {
	const hostile = `<script>window.pwned=1</script><img src=x onerror=alert(1)>`
	is := []*cassette.Interaction{
		chat("You keep notes.", nil, "Note that it is sunny.", "", "write_note"),
		mcpInteraction(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"agent","version":"1"}}}`,
			`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","serverInfo":{"name":"notes","version":"1.0.0"},"capabilities":{"tools":{}}}}`, false),
		mcpInteraction(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`, "", false),
		mcpInteraction(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"write_note","inputSchema":{"type":"object"}},{"name":"draw","inputSchema":{"type":"object"}}]}}`, true),
		mcpInteraction(toolCall(2, "write_note", `{"path":"sun.txt","text":"It is sunny."}`),
			`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"{\"bytes\":12,\"path\":\"sun.txt\"}"}],"structuredContent":{"bytes":12,"path":"sun.txt"}}}`, true),
		mcpInteraction(toolCall(3, "write_note", `{"path":"../etc/passwd","text":"x"}`),
			`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"bad path \"../etc/passwd\""}],"isError":true}}`, false),
		mcpInteraction(toolCall(4, "nope", `{}`), `{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"unknown tool \"nope\""}}`, true),
		mcpInteraction(toolCall(5, "draw", `{"what":"a sun"}`),
			`{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"image","data":"AA==","mimeType":"image/png"},{"type":"text","text":"drawn"}]}}`, false),
		mcpInteraction(toolCall(6, "write_note", fmt.Sprintf(`{"path":"h.html","text":%q}`, hostile)),
			fmt.Sprintf(`{"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":%q}]}}`, hostile), true),
		mcpInteraction(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`, false),
	}
	src := &fakeSource{CassetteSource: view.CassetteSource{C: writeCassette(t, is)}, changed: make(chan struct{}), served: map[uint64]bool{}}
	src.add(view.LogEntry{Time: time.Now(), Method: "POST", Upstream: "mcp/notes", Path: "/", Kind: "mcp", Interaction: 5, Status: 200,
		ToolCalls: []cassette.ToolCall{{Name: "write_note", Arguments: []byte(`{"path":"sun.txt"}`)}}})
	srv, _ := serve(t, src, "")
	ui := srv.URL + "/_llmproxy/ui/"
	for _, tc := range []struct {
		path      string
		want      []string
		notWanted []string
	}{
		{"", []string{"<td>write_note</td>", "<td>notes/write_note</td>", "<td>notes/nope</td>", "<td>notes/draw</td>"}, nil},
		{"?q=sun.txt+notes/write_note", []string{"1 match for", `href="/_llmproxy/ui/interactions/5"`}, nil},
		{"?q=tools/list", []string{"1 match for", `href="/_llmproxy/ui/interactions/4"`}, nil},
		{"interactions/1", []string{`calls <code>write_note</code>`}, nil},
		{"interactions/2", []string{`<code class="path">initialize</code>`, "&#34;clientInfo&#34;", "MCP server notes", "&#34;serverInfo&#34;"}, nil},
		{"interactions/3", []string{"A notification: the server accepted it and answers nothing."}, []string{"No answer to show"}},
		{"interactions/4", []string{"tools: write_note, draw"}, nil},
		{"interactions/5", []string{
			`<article class="msg assistant">`, `<span class="role">MCP client</span> <code class="path">tools/call</code>`,
			`calls <code>notes/write_note</code>`, "&#34;path&#34;: &#34;sun.txt&#34;",
			`<article class="msg tool">`, `<span class="role">MCP server notes</span>`, `result of <code>notes/write_note</code>`,
			"&#34;bytes&#34;: 12"}, []string{"structured content:"}},
		{"interactions/6", []string{`<section class="result is-error"`, `<span class="badge bad">error</span>`, "bad path &#34;../etc/passwd&#34;"}, nil},
		{"interactions/7", []string{`calls <code>notes/nope</code>`, `<span class="badge bad">error: -32602: unknown tool &#34;nope&#34;</span>`}, []string{"result of"}},
		{"interactions/8", []string{`<span class="badge">image</span>`, "drawn"}, nil},
		{"interactions/9", []string{"&lt;script&gt;window.pwned=1&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"}, []string{"<script>window", "<img src=x"}},
		{"interactions/10", []string{"not one JSON-RPC message", "-32700: parse error"}, nil},
		{"log", []string{`→ <code>notes/write_note</code>`}, nil},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, body := get(t, ui+tc.path)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d\n%.2000s", resp.StatusCode, body)
			}
			if missing := containsAll(body, tc.want...); missing != "" {
				t.Errorf("the page lacks %q:\n%s", missing, body)
			}
			for _, w := range tc.notWanted {
				if strings.Contains(body, w) {
					t.Errorf("the page holds %q:\n%s", w, body)
				}
			}
		})
	}
}
