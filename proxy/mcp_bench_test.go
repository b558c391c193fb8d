package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/store"
	"github.com/llmproxy/llmproxy/wire"
)

// BenchmarkReplayMCP times one replayed MCP tools/call against the
// baseline of one replayed model call (BenchmarkReplay's OpenAI chat
// request), on one server over one cassette, in the same run: the
// tools/call's answer as JSON and as a one-event SSE stream, each with its
// JSON-RPC id rewritten to the live request's.
func BenchmarkReplayMCP(b *testing.B) {
	chat := fake.Captured("openai-chat-toolcalls.request.json")
	const call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"notes/today.md","content":"# Today\n\n- ship the MCP route\n"}}}`
	const result = `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"wrote 38 bytes to notes/today.md"}],"structuredContent":{"path":"notes/today.md","bytesWritten":38},"isError":false}}`
	p := mcpBenchServer(b, chat, call, result)
	cases := []struct {
		name, path, body string
		header           map[string]string
	}{
		{"model openai-chat (baseline)", "/v1/chat/completions", string(chat), nil},
		{"mcp tools/call JSON", "/mcp/files", strings.Replace(call, `"id":7`, `"id":1234`, 1), nil},
		{"mcp tools/call SSE", "/mcp/files/sse", strings.Replace(call, `"id":7`, `"id":"abc"`, 1), map[string]string{proxy.MCPSessionHeader: "s-1"}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			defer reportGC(b)()
			for b.Loop() {
				r := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body))
				r.Header.Set("Content-Type", "application/json")
				for k, v := range tc.header {
					r.Header.Set(k, v)
				}
				w := httptest.NewRecorder()
				p.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}

// mcpBenchServer is a replaying proxy over a cassette holding the chat
// request with its captured answer, and the MCP call with its result as
// JSON (at /mcp/files) and as SSE (at /mcp/files/sse).
func mcpBenchServer(b *testing.B, chat []byte, call, result string) *proxy.Server {
	path := cassettePath(b)
	c, err := cassette.Open(path, cassette.Options{Version: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	m, err := cassette.DefaultIndexer()
	if err != nil {
		b.Fatal(err)
	}
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	mcpRequest := func(p string) cassette.Request {
		return cassette.Request{Method: http.MethodPost, Path: p, Headers: jsonHeader, Body: []byte(call)}
	}
	ct := &cassette.Contents{Meta: store.Meta{IndexRules: m.Fingerprint()}, Interactions: []*cassette.Interaction{
		{Upstream: "openai", Provider: "openai", Kind: string(wire.KindOpenAIChat),
			Request:  cassette.Request{Method: http.MethodPost, Path: "/v1/chat/completions", Headers: jsonHeader, Body: chat},
			Response: cassette.Response{Status: http.StatusOK, Headers: jsonHeader, Body: fake.Captured("openai-chat-toolcalls.response.json")}},
		{Upstream: "mcp/files", Kind: string(wire.KindMCP), Request: mcpRequest(""),
			Response: cassette.Response{Status: http.StatusOK, Headers: jsonHeader, Body: []byte(result)}},
		{Upstream: "mcp/files", Kind: string(wire.KindMCP), Request: mcpRequest("/sse"),
			Response: cassette.Response{Status: http.StatusOK, Headers: http.Header{"Content-Type": {"text/event-stream"}, proxy.MCPSessionHeader: {"recorded"}}, Framing: "sse",
				Events: []cassette.Event{{AtMillis: 1, Data: []byte("event: message\ndata: " + result + "\n\n")}}}},
	}}
	if err := c.Replace(ct, m.Keys); err != nil {
		b.Fatal(err)
	}
	if err := c.Close(); err != nil {
		b.Fatal(err)
	}
	if c, err = cassette.Open(path, cassette.Options{ReadOnly: true}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	p, err := proxy.New(proxy.Config{Cassette: c, OnExhausted: proxy.ExhaustedRepeatLast, Transport: forbidden{b}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}
