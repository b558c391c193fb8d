// Package sdktest_test points the official provider SDKs at answers written
// by package wire, served from an httptest server, and checks that each SDK
// sees exactly the text, reasoning, tool calls, finish reason and usage
// written, without an error. It holds tests only, so that the SDKs stay out
// of every non-test build.
package sdktest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/wire"
)

// step is one answer of a mock: an answer, an error, or an answer whose
// stream breaks with an error event after cut events.
type step struct {
	answer *wire.Answer
	err    *wire.ErrorAnswer
	cut    int
	chunk  int // stream piece length; 0 per word
}

// mock answers the n-th request with the n-th step, written as the
// request's provider answers it: the API kind from the path, the options
// (stream or not, include_usage, alt=sse, …) from the request.
type mock struct {
	t      testing.TB
	srv    *httptest.Server
	always *step // answers every request when set
	mu     sync.Mutex
	steps  []step
	reqs   []string // "METHOD path?query" of each request
}

func newMock(t testing.TB, steps ...step) *mock {
	return start(t, &mock{t: t, steps: steps})
}

// answering returns a mock that gives a the answer to every request.
func answering(t testing.TB, a wire.Answer) *mock {
	return start(t, &mock{t: t, always: &step{answer: &a}})
}

func start(t testing.TB, m *mock) *mock {
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *mock) URL() string { return m.srv.URL }

func (m *mock) requests() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.reqs...)
}

func (m *mock) serve(w http.ResponseWriter, r *http.Request) {
	if m.always != nil {
		m.respond(w, r, *m.always)
		return
	}
	m.mu.Lock()
	n := len(m.reqs)
	m.mu.Unlock()
	if n >= len(m.steps) {
		m.t.Errorf("request %d (%s %s): the mock has %d steps", n+1, r.Method, r.URL, len(m.steps))
		http.Error(w, "no more steps", http.StatusInternalServerError)
		return
	}
	m.respond(w, r, m.steps[n])
}

func (m *mock) respond(w http.ResponseWriter, r *http.Request, s step) {
	m.mu.Lock()
	m.reqs = append(m.reqs, r.Method+" "+r.URL.RequestURI())
	m.mu.Unlock()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		m.t.Errorf("read request: %v", err)
		return
	}
	kind := wire.Detect(r.Method, r.URL.Path)
	o, err := wire.OptionsFor(kind, r.URL.RequestURI(), body)
	if err != nil {
		m.t.Errorf("%s %s: %v", r.Method, r.URL, err)
		return
	}
	o.Chunk = s.chunk
	var out wire.Written
	switch {
	case s.err != nil:
		out, err = wire.WriteError(kind, *s.err)
	default:
		out, err = wire.Write(kind, *s.answer, o)
		if err == nil && s.cut > 0 {
			var ev wire.Event
			ev, err = wire.StreamError(kind, o, wire.ErrorAnswer{Status: 529, Message: "Overloaded"}, s.cut)
			out.Events = append(out.Events[:s.cut:s.cut], ev)
		}
	}
	if err != nil {
		m.t.Errorf("write %s answer: %v", kind, err)
		return
	}
	send(w, out)
}

// send writes a Written as a server should: the headers and status, then
// the body, or each event flushed on its own.
func send(w http.ResponseWriter, out wire.Written) {
	for k, v := range out.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(out.Status)
	if !out.Streamed() {
		_, _ = w.Write(out.Body)
		return
	}
	rc := http.NewResponseController(w)
	for _, e := range out.Events {
		if _, err := w.Write(e.Raw); err != nil {
			return
		}
		_ = rc.Flush()
	}
}

var created = time.Unix(1700000000, 0)

// content is one answer content the SDK tests cover, in every form.
type content struct {
	name string
	a    wire.Answer
}

var contents = []content{
	{"text", wire.Answer{Model: "m-1", ID: "id-text-1", Created: created,
		Text: "Paris is sunny, 21 °C. \"Enjoy\" <it> & more!", Usage: wire.Usage{Input: 12, Output: 9}}},
	{"one call", wire.Answer{Model: "m-1", ID: "id-call-1", Created: created,
		ToolCalls: []wire.ToolCall{{ID: "call_paris", Name: "weather", Arguments: []byte(`{"location":"Paris","unit":"celsius"}`)}},
		Usage:     wire.Usage{Input: 40, Output: 17}}},
	{"parallel calls", wire.Answer{Model: "m-1", ID: "id-calls-1", Created: created,
		ToolCalls: []wire.ToolCall{
			{ID: "call_weather", Name: "weather", Arguments: []byte(`{"location":"Paris","days":[1,2],"nested":{"deep":true}}`)},
			{ID: "call_weather_2", Name: "weather", Arguments: []byte(`{"location":"東京"}`)},
			{ID: "call_current_time", Name: "current_time", Arguments: []byte(`{}`)},
		},
		Usage: wire.Usage{Input: 88, Output: 51}}},
	{"reasoning", wire.Answer{Model: "m-1", ID: "id-think-1", Created: created,
		Reasoning: "The user wants the weather.\n\nA short answer will do.", Text: "It is sunny.",
		Usage: wire.Usage{Input: 20, Output: 30, Reasoning: 14}}},
	{"reasoning and call", wire.Answer{Model: "m-1", ID: "id-think-2", Created: created,
		Reasoning: "I need the weather tool.", Text: "Let me check.",
		ToolCalls: []wire.ToolCall{{ID: "call_weather", Name: "weather", Arguments: []byte(`{"location":"Paris"}`)}},
		Usage:     wire.Usage{Input: 20, Output: 30, Reasoning: 6}}},
}

// seen is what an SDK made of an answer, in provider-neutral terms;
// thoughts is the reasoning token count, -1 where the wire has none.
type seen struct {
	text, reasoning         string
	calls                   []wire.ToolCall
	finish                  string
	input, output, thoughts int
}

// check fails the test unless the SDK saw exactly the answer, with the
// finish reason spelled as the provider does.
func check(t *testing.T, a wire.Answer, got seen, finish string) {
	t.Helper()
	if got.text != a.Text {
		t.Errorf("text %q, want %q", got.text, a.Text)
	}
	if got.reasoning != a.Reasoning {
		t.Errorf("reasoning %q, want %q", got.reasoning, a.Reasoning)
	}
	if got.finish != finish {
		t.Errorf("finish reason %q, want %q", got.finish, finish)
	}
	if got.input != a.Usage.Input || got.output != a.Usage.Output {
		t.Errorf("usage %d in %d out, want %d and %d", got.input, got.output, a.Usage.Input, a.Usage.Output)
	}
	if got.thoughts >= 0 && got.thoughts != a.Usage.Reasoning {
		t.Errorf("%d reasoning tokens, want %d", got.thoughts, a.Usage.Reasoning)
	}
	if len(got.calls) != len(a.ToolCalls) {
		t.Fatalf("%d tool calls %+v, want %d", len(got.calls), got.calls, len(a.ToolCalls))
	}
	for i, c := range got.calls {
		w := a.ToolCalls[i]
		if c.ID != w.ID || c.Name != w.Name || !sameJSON(c.Arguments, w.Arguments) {
			t.Errorf("call %d: %s %s %s, want %s %s %s", i, c.ID, c.Name, c.Arguments, w.ID, w.Name, w.Arguments)
		}
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// finishOf names an answer's finish reason: stop, or tool-calls when it
// calls tools.
func finishOf(a wire.Answer) wire.Finish {
	if a.Finish != "" {
		return a.Finish
	}
	if len(a.ToolCalls) > 0 {
		return wire.FinishToolCalls
	}
	return wire.FinishStop
}

func streamName(stream bool) string {
	if stream {
		return "stream"
	}
	return "json"
}

// weatherSchema is the JSON schema of the tools offered.
func weatherSchema() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}}}
}

// TestStreamsHaveNoContentLength fetches each streamed form with plain HTTP:
// the headers are the provider's, a stream has no Content-Length and is
// sent in chunks, a whole body has one.
func TestStreamsHaveNoContentLength(t *testing.T) {
	m := answering(t, contents[0].a)
	tests := []struct {
		path, body, contentType string
		stream                  bool
	}{
		{"/v1/chat/completions", `{"stream":true,"messages":[]}`, "text/event-stream; charset=utf-8", true},
		{"/v1/chat/completions", `{"messages":[]}`, "application/json", false},
		{"/v1/responses", `{"stream":true,"input":"hi"}`, "text/event-stream; charset=utf-8", true},
		{"/v1/messages", `{"stream":true,"messages":[]}`, "text/event-stream; charset=utf-8", true},
		{"/v1beta/models/g:streamGenerateContent?alt=sse", `{"contents":[]}`, "text/event-stream", true},
		{"/v1beta/models/g:streamGenerateContent", `{"contents":[]}`, "application/json; charset=UTF-8", true},
		{"/v1beta/models/g:generateContent", `{"contents":[]}`, "application/json; charset=UTF-8", false},
		{"/api/chat", `{"messages":[]}`, "application/x-ndjson", true},
		{"/api/chat", `{"messages":[],"stream":false}`, "application/json; charset=utf-8", false},
	}
	for _, tt := range tests {
		resp, err := http.Post(m.URL()+tt.path, "application/json", bytes.NewBufferString(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != tt.contentType {
			t.Errorf("%s %s: Content-Type %q, want %q", tt.path, tt.body, ct, tt.contentType)
		}
		chunked := len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked"
		if tt.stream != (resp.ContentLength == -1 && chunked) || tt.stream == (resp.Header.Get("Content-Length") != "") {
			t.Errorf("%s %s: Content-Length %d, transfer encoding %v (streamed: %v)", tt.path, tt.body, resp.ContentLength, resp.TransferEncoding, tt.stream)
		}
	}
}
