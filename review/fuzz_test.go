package review

import (
	"hash/maphash"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
)

// FuzzCompare: any recorded request and answer, on any kind and framing,
// is read and compared without a panic, and a reading has no difference
// from itself and the same digest.
func FuzzCompare(f *testing.F) {
	f.Add("openai-chat", "", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"x","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]}`,
		`{"choices":[{"index":0,"message":{"role":"assistant","content":"{\"ok\":true}"},"finish_reason":"stop"}]}`, 200)
	f.Add("anthropic-messages", "sse", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}}}\n\n"+
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"[[[[\"}}\n\n", 200)
	f.Add("openai-responses", "", `{"previous_response_id":"r","input":[{"type":"function_call_output","call_id":"c","output":"1"}]}`, `{"error":{"message":"no"}}`, 500)
	f.Add("embeddings", "", `{"input":"x"}`, `{"data":[{"embedding":[0.1]}]}`, 200)
	f.Add("generic", "", "not json", "[[[[[[[[", 200)
	seed := maphash.MakeSeed()
	f.Fuzz(func(t *testing.T, kind, framing, req, resp string, status int) {
		i := &cassette.Interaction{Kind: kind, Upstream: "default",
			Request:  cassette.Request{Method: "POST", Path: "/v1/x", Body: cassette.Body(req)},
			Response: cassette.Response{Status: status, Framing: framing, Body: cassette.Body(resp)}}
		if framing != "" {
			i.Response.Body = nil
			i.Response.Events = []cassette.Event{{Data: cassette.Body(resp)}}
		}
		a, b := read(i), read(i)
		if d := differences(a, b); len(d) != 0 {
			t.Errorf("a reading differs from itself: %+v", d)
		}
		if a.digest(seed) != b.digest(seed) {
			t.Error("a reading's digest is not stable")
		}
		other := read(&cassette.Interaction{Kind: kind, Request: cassette.Request{Method: "POST", Path: "/v1/x", Body: cassette.Body(`{}`)},
			Response: cassette.Response{Status: 200, Body: cassette.Body(`{}`)}})
		differences(a, other)
		differences(other, a)
		a.title()
		a.setup()
		a.firstUser()
	})
}
