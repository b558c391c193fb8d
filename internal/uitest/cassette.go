// Package uitest helps test the web view: it writes a cassette of sample
// conversations on every wire (hostile recorded content included), and
// drives a headless Chromium.
package uitest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/cassettes"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/wire"
)

// Hostile markup in recorded content. A page that ran any of it would set
// window.pwned or open a dialog.
const (
	HostileUser   = `<script>window.pwned = "user"; alert("user")</script>What is <b>bold</b>?`
	HostileAnswer = `Sure! <img src=x onerror="window.pwned='answer';alert('answer')"><script>window.pwned = "answer"</script>`
	HostileTool   = `<svg onload="window.pwned='tool'">`
)

// HostileID is the id of the hostile interaction in Cassette's file.
const HostileID = 7

// DemoIDs are the ids of the demo cassette's interactions in Cassette's
// file: a scrubbed weather tool loop whose call has a preset fixture.
var DemoIDs = []uint64{1, 2}

// WeatherCall is the call id of the demo's scrubbed weather call.
const WeatherCall = "call_weather"

// Cassette writes the sample cassette at path: the demo's two interactions
// (a scrubbed weather tool loop, streamed), then OpenAI Chat, Responses,
// Anthropic (streamed), Gemini (streamed) and Ollama (streamed)
// interactions from captured provider bytes, then one holding hostile
// markup in its prompt, answer, tool call and headers.
func Cassette(t testing.TB, path string) {
	t.Helper()
	demo := filepath.Join(t.TempDir(), "demo.cassette")
	if err := os.WriteFile(demo, cassettes.Demo, 0o644); err != nil {
		t.Fatal(err)
	}
	dc, err := cassette.Open(demo, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ct, err := dc.Load()
	dc.Close()
	if err != nil {
		t.Fatal(err)
	}
	at := ct.Interactions[len(ct.Interactions)-1].RecordedAt
	add := func(i *cassette.Interaction) {
		at = at.Add(2 * time.Second)
		i.RecordedAt = at
		if i.Provider == "" {
			i.Provider = wire.Kind(i.Kind).Provider()
		}
		ct.Interactions = append(ct.Interactions, i)
	}
	add(whole("openai", "openai-chat", "/v1/chat/completions", "openai-chat-toolcalls.request.json",
		"openai-chat-toolcalls.response.json", "openai-chat-toolcalls.response.headers.txt", 412))
	add(whole("openai", "openai-responses", "/v1/responses", "openai-responses-functioncall-output.request.json",
		"openai-responses-functioncall-output.response.json", "", 690))
	add(streamed("anthropic", "anthropic-messages", "/v1/messages", "anthropic-messages-toolresult.request.json",
		"anthropic-messages-stream-tooluse.sse", wire.FramingSSE, 380, 55))
	add(streamed("gemini", "gemini", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
		"gemini-streamgeneratecontent-sse-functionresponse.request.json", "gemini-streamgeneratecontent-sse-functioncall.sse",
		wire.FramingSSE, 910, 140))
	add(hostile())
	add(streamed("ollama", "ollama", "/api/chat", "ollama-api-chat-toolresult.request.json",
		"ollama-api-chat-stream-toolcalls.ndjson", wire.FramingNDJSON, 95, 30))
	c, err := cassette.Open(path, cassette.Options{Version: "uitest"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The index keys here are not a matcher's: the empty index rules make a
	// proxy that opens the file index it anew.
	ct.Meta.IndexRules = ""
	err = c.Replace(ct, func(i *cassette.Interaction) (string, string, error) {
		return fmt.Sprint(i.ID), i.Request.Path, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ct.Interactions[HostileID-1].Request.Headers.Get("X-Note") == "" {
		t.Fatalf("uitest: the hostile interaction is not number %d", HostileID)
	}
}

// whole is a non-streamed interaction from captured files.
func whole(upstream, kind, path, req, resp, headers string, ms float64) *cassette.Interaction {
	h := http.Header{"Content-Type": {"application/json"}}
	if headers != "" {
		// What a recording keeps: the body decoded, hop-by-hop headers gone.
		h = fake.CapturedHeaders(headers)
		for _, k := range []string{"Content-Encoding", "Content-Length", "Transfer-Encoding", "Connection"} {
			h.Del(k)
		}
	}
	p, q := splitQuery(path)
	return &cassette.Interaction{
		Upstream: upstream, Kind: kind,
		Request: cassette.Request{
			Method: http.MethodPost, Path: p, Query: q, Body: fake.Captured(req),
			Headers: http.Header{"Content-Type": {"application/json"}, "Authorization": {"REDACTED"}},
		},
		Response: cassette.Response{Status: 200, Headers: h, Body: fake.Captured(resp), TTFBMillis: ms, DurationMillis: ms + 0.8},
	}
}

// streamed is a streamed interaction from captured files, its events
// spread from ttfb at gap apart.
func streamed(upstream, kind, path, req, resp string, f wire.Framing, ttfb, gap float64) *cassette.Interaction {
	ct := "text/event-stream"
	if f == wire.FramingNDJSON {
		ct = "application/x-ndjson"
	}
	p, q := splitQuery(path)
	i := &cassette.Interaction{
		Upstream: upstream, Kind: kind,
		Request: cassette.Request{
			Method: http.MethodPost, Path: p, Query: q, Body: fake.Captured(req),
			Headers: http.Header{"Content-Type": {"application/json"}, "X-Api-Key": {"REDACTED"}},
		},
		Response: cassette.Response{Status: 200, Headers: http.Header{"Content-Type": {ct}}, Framing: f.String(), TTFBMillis: ttfb},
	}
	at := ttfb
	for n, e := range wire.Split(f, fake.Captured(resp)) {
		if n > 0 {
			at += gap * float64(1+n%3) / 2
		}
		i.Response.Events = append(i.Response.Events, cassette.Event{AtMillis: at, Data: e.Raw})
	}
	i.Response.DurationMillis = at + 1
	return i
}

// hostile is an OpenAI Chat interaction whose prompt, answer, tool call and
// headers hold markup and script.
func hostile() *cassette.Interaction {
	req := fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":%q},{"role":"user","content":%q}],"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}}}]}`,
		"You render HTML.", HostileUser)
	resp := fmt.Sprintf(`{"id":"chatcmpl-x","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":%q,"tool_calls":[{"id":"call_<i>x</i>","type":"function","function":{"name":"lookup","arguments":%q}}]},"finish_reason":"tool_calls"}]}`,
		HostileAnswer, fmt.Sprintf(`{"q":%q}`, HostileTool))
	return &cassette.Interaction{
		Upstream: "default", Kind: "openai-chat",
		Request: cassette.Request{
			Method: http.MethodPost, Path: "/v1/chat/completions", Body: []byte(req),
			Headers: http.Header{"Content-Type": {"application/json"}, "X-Note": {`"><script>window.pwned="header"</script>`}},
		},
		Response: cassette.Response{
			Status: 200, Headers: http.Header{"Content-Type": {"application/json"}}, Body: []byte(resp),
			TTFBMillis: 230, DurationMillis: 231,
		},
	}
}

func splitQuery(path string) (string, string) {
	for k := range len(path) {
		if path[k] == '?' {
			return path[:k], path[k+1:]
		}
	}
	return path, ""
}
