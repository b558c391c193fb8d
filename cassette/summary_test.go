package cassette_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/wire"
)

func TestSummarize(t *testing.T) {
	streamed := cassette.Response{Status: 200, Framing: "sse"}
	for _, e := range wire.Split(wire.FramingSSE, fake.Captured("openai-chat-stream-toolcalls.sse")) {
		streamed.Events = append(streamed.Events, cassette.Event{Data: e.Raw})
	}
	tests := []struct {
		name string
		i    cassette.Interaction
		want string
	}{
		{"stream with a tool call",
			cassette.Interaction{ID: 3, Upstream: "openai", Provider: "openai", Kind: "openai-chat", RecordedAt: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
				Request: cassette.Request{Method: "POST", Path: "/v1/chat/completions"}, Response: streamed},
			`{"id":3,"upstream":"openai","provider":"openai","kind":"openai-chat","method":"POST","path":"/v1/chat/completions","status":200,"stream":true,` +
				`"tool_calls":[{"id":"call_ZR5UUuTt3pf61kjwAJIYdVMj","name":"get_capital","arguments":{"country":"UK"}}],"model":"gpt-4o-mini-2024-07-18","recorded_at":"2026-03-04T05:06:07Z"}`},
		{"generic body",
			cassette.Interaction{ID: 1, Upstream: cassette.DefaultUpstream, Kind: "generic",
				Request: cassette.Request{Method: "GET", Path: "/v1/models"}, Response: cassette.Response{Status: 200, Body: []byte(`{}`)}},
			`{"id":1,"upstream":"default","kind":"generic","method":"GET","path":"/v1/models","status":200,"stream":false,"recorded_at":"0001-01-01T00:00:00Z"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(cassette.Summarize(&tt.i))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestToolCallsShowBrokenArgumentsAsAString(t *testing.T) {
	got, err := json.Marshal(cassette.ToolCalls([]wire.ToolCall{{ID: "c1", Name: "f", Arguments: []byte(`{"a":`)}, {Name: "g"}}))
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"id":"c1","name":"f","arguments":"{\"a\":"},{"id":"","name":"g","arguments":{}}]`; string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestWireFraming(t *testing.T) {
	for name, want := range map[string]wire.Framing{"": wire.FramingNone, "sse": wire.FramingSSE, "ndjson": wire.FramingNDJSON} {
		r := cassette.Response{Framing: name}
		if got := r.WireFraming(); got != want {
			t.Errorf("framing %q: %v, want %v", name, got, want)
		}
	}
}

func TestProxyPath(t *testing.T) {
	if got := cassette.ProxyPath(cassette.DefaultUpstream, "/v1/chat/completions"); got != "/v1/chat/completions" {
		t.Errorf("default upstream: %s", got)
	}
	if got := cassette.ProxyPath("ollama", "/api/chat"); got != "/ollama/api/chat" {
		t.Errorf("named upstream: %s", got)
	}
}

// TestSummarizeMCPToolCall: an MCP tools/call lists as the tool call its
// request made; other MCP messages list none.
func TestSummarizeMCPToolCall(t *testing.T) {
	call := &cassette.Interaction{Kind: "mcp", Upstream: "mcp/fs", Request: cassette.Request{Method: "POST",
		Body: []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"a"}}}`)},
		Response: cassette.Response{Status: 200, Body: []byte(`{"jsonrpc":"2.0","id":4,"result":{}}`)}}
	s := cassette.Summarize(call)
	if len(s.ToolCalls) != 1 || s.ToolCalls[0].Name != "write_file" || string(s.ToolCalls[0].Arguments) != `{"path":"a"}` {
		t.Errorf("tool calls = %+v", s.ToolCalls)
	}
	call.Request.Body = []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	if s := cassette.Summarize(call); len(s.ToolCalls) != 0 {
		t.Errorf("tools/list lists tool calls %+v", s.ToolCalls)
	}
}
