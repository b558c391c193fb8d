package mcp_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/llmproxy/llmproxy/mcp"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, body      string
		id, method, tok string
		notification    bool
		err             error
	}{
		{name: "request", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"progressToken":"p1"}}}`, id: "7", method: "tools/call", tok: `"p1"`},
		{name: "string id", body: ` {"jsonrpc":"2.0","id":"a","method":"ping"}`, id: `"a"`, method: "ping"},
		{name: "notification", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, method: "notifications/initialized", notification: true},
		{name: "response", body: `{"jsonrpc":"2.0","id":3,"result":{}}`, id: "3", notification: true},
		{name: "batch", body: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, err: mcp.ErrBatch},
		{name: "malformed", body: `{"jsonrpc":`, err: mcp.ErrMalformed},
		{name: "empty", body: ``, err: mcp.ErrMalformed},
		{name: "not an object", body: `"hi"`, err: mcp.ErrNotJSONRPC},
		{name: "version 1", body: `{"jsonrpc":"1.0","id":1,"method":"ping"}`, err: mcp.ErrNotJSONRPC},
		{name: "object id", body: `{"jsonrpc":"2.0","id":{},"method":"ping"}`, err: mcp.ErrNotJSONRPC},
		{name: "number method", body: `{"jsonrpc":"2.0","id":1,"method":5}`, err: mcp.ErrNotJSONRPC},
		{name: "nothing", body: `{"jsonrpc":"2.0","id":1}`, err: mcp.ErrNotJSONRPC},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := mcp.Parse([]byte(tc.body))
			if !errors.Is(err, tc.err) || (tc.err != nil) != (err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if string(m.ID) != tc.id || m.Method != tc.method || string(m.ProgressToken) != tc.tok || m.Notification() != tc.notification {
				t.Errorf("got id %s method %q token %s notification %v", m.ID, m.Method, m.ProgressToken, m.Notification())
			}
		})
	}
}

func TestRewrite(t *testing.T) {
	for _, tc := range []struct{ name, doc, id, tok, want string }{
		{"response id", `{"jsonrpc":"2.0","id":3,"result":{"id":3}}`, `"x"`, "", `{"jsonrpc":"2.0","id":"x","result":{"id":3}}`},
		{"error id", `{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m"}}`, `9`, "", `{"jsonrpc":"2.0","id":9,"error":{"code":1,"message":"m"}}`},
		{"server request kept", `{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage"}`, `9`, "", `{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage"}`},
		{"progress token", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2}}`, `9`, `"t"`, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":2}}`},
		{"not JSON kept", `nope`, `9`, "", `nope`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tok []byte
			if tc.tok != "" {
				tok = []byte(tc.tok)
			}
			if got := string(mcp.Rewrite([]byte(tc.doc), []byte(tc.id), tok)); got != tc.want {
				t.Errorf("got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestRewriteEvent(t *testing.T) {
	ev := "event: message\nid: 1_0\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\r\n\n"
	want := "event: message\nid: 1_0\ndata: {\"jsonrpc\":\"2.0\",\"id\":12,\"result\":{}}\r\n\n"
	if got := string(mcp.RewriteEvent([]byte(ev), []byte("12"), nil)); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := string(mcp.RewriteEvent([]byte(": keep-alive\n\n"), []byte("12"), nil)); got != ": keep-alive\n\n" {
		t.Errorf("a comment event changed: %q", got)
	}
}

func TestErrorBody(t *testing.T) {
	b := mcp.ErrorBody([]byte(`"a"`), mcp.CodeCassetteMiss, "miss \"x\"\n\x00", []byte(`{"k":1}`))
	var v struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if v.JSONRPC != "2.0" || string(v.ID) != `"a"` || v.Error.Code != -32001 || v.Error.Message != "miss \"x\"\n\x00" || string(v.Error.Data) != `{"k":1}` {
		t.Errorf("got %s", b)
	}
	if b := mcp.ErrorBody(nil, -32700, "m", nil); string(b) != `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m"}}` {
		t.Errorf("got %s", b)
	}
}
