package mcp_test

import (
	"errors"
	"testing"

	"github.com/llmproxy/llmproxy/mcp"
)

func TestToolOutput(t *testing.T) {
	for _, tc := range []struct {
		name, msg, out, at string
		isError            bool
		err                error
	}{
		{name: "structured", msg: `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"a\": 1}"}],"structuredContent":{"a":1}}}`, out: `{"a":1}`, at: "result.structuredContent"},
		{name: "text", msg: `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"a\": 1}"}]}}`, out: `{"a": 1}`, at: "result.content.0.text"},
		{name: "structured, plain text", msg: `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"done"}],"structuredContent":{"a":1}}}`, out: `{"a":1}`, at: "result.structuredContent"},
		{name: "envelope", msg: `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"error\":{}}"}],"isError":true}}`, out: `{"error":{}}`, at: "result.content.0.text", isError: true},
		{name: "differ", msg: `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"a\":2}"}],"structuredContent":{"a":1}}}`, err: mcp.ErrNoToolOutput},
		{name: "plain text", msg: `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"bad path"}],"isError":true}}`, isError: true, err: mcp.ErrNoToolOutput},
		{name: "two blocks", msg: `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"1"},{"type":"text","text":"2"}]}}`, err: mcp.ErrNoToolOutput},
		{name: "image", msg: `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}}`, err: mcp.ErrNoToolOutput},
		{name: "JSON-RPC error", msg: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no such tool"}}`, err: mcp.ErrNoToolOutput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, at, isError, err := mcp.ToolOutput([]byte(tc.msg))
			if !errors.Is(err, tc.err) || (err != nil) != (tc.err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if isError != tc.isError || (err == nil && (string(out) != tc.out || at != tc.at)) {
				t.Errorf("got %s at %s, isError %v; want %s at %s, %v", out, at, isError, tc.out, tc.at, tc.isError)
			}
			if err != nil {
				return
			}
			set, err := mcp.SetToolOutput([]byte(tc.msg), []byte(`{"z":true}`))
			if err != nil {
				t.Fatal(err)
			}
			if again, _, _, err := mcp.ToolOutput(set); err != nil || string(again) != `{"z":true}` {
				t.Errorf("after SetToolOutput: %s, %v; message %s", again, err, set)
			}
		})
	}
}

func TestResponse(t *testing.T) {
	events := [][]byte{
		[]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n"),
		[]byte("event: message\r\nid: 9\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\r\n"),
	}
	msg, n, ok := mcp.Response(nil, events)
	if !ok || n != 1 || string(msg) != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Fatalf("Response = %s, %d, %v", msg, n, ok)
	}
	_, out := mcp.ReplaceResponse(nil, events, n, []byte(`{"jsonrpc":"2.0","id":1,"result":{"x":1}}`))
	if string(out[1]) != "event: message\r\nid: 9\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":1}}\r\n\r\n" || string(out[0]) != string(events[0]) {
		t.Errorf("ReplaceResponse = %q", out)
	}
	if string(events[1]) != "event: message\r\nid: 9\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\r\n" {
		t.Error("ReplaceResponse modified its input")
	}
	if _, _, ok := mcp.Response(nil, events[:1]); ok {
		t.Error("a stream of notifications has a response")
	}
	if _, _, ok := mcp.Response([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`), nil); !ok {
		t.Error("a JSON body's response was not found")
	}
}
