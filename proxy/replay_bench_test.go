package proxy_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/store"
	"github.com/llmproxy/llmproxy/wire"
)

// BenchmarkReplay times one replayed request in process, server side only:
// a captured OpenAI chat request answered from a cassette with its captured
// JSON response, asked on the unprefixed path (the default upstream) and on
// the /openai/ path.
func BenchmarkReplay(b *testing.B) {
	reqBody := fake.Captured("openai-chat-toolcalls.request.json")
	h := replayServer(b, reqBody, cassette.Response{Status: http.StatusOK,
		Headers: http.Header{"Content-Type": {"application/json"}}, Body: fake.Captured("openai-chat-toolcalls.response.json")})
	for _, path := range []string{"/v1/chat/completions", "/openai/v1/chat/completions"} {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			defer reportGC(b)()
			for b.Loop() {
				r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(reqBody))
				r.Header.Set("Content-Type", "application/json")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}

// reportGC reports, when the function it returns is called, the CPU time
// the garbage collector spent per operation since reportGC was called
// (gc-ns/op): what a request's garbage and the server's live heap cost,
// steadier on a loaded machine than the time per operation.
func reportGC(b *testing.B) func() {
	sample := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	runtime.GC()
	metrics.Read(sample)
	before := sample[0].Value.Float64()
	return func() {
		runtime.GC() // the metric is brought up to date at the end of a cycle
		metrics.Read(sample)
		b.ReportMetric((sample[0].Value.Float64()-before)*1e9/float64(b.N), "gc-ns/op")
	}
}

// BenchmarkReplaySSE times one replayed streamed request, server side only:
// a 200-event SSE answer served at once (no pacing).
func BenchmarkReplaySSE(b *testing.B) {
	reqBody := fake.Captured("openai-chat-toolcalls.request.json")
	resp := cassette.Response{Status: http.StatusOK, Headers: http.Header{"Content-Type": {"text/event-stream"}}, Framing: "sse"}
	for n := range 200 {
		data := fmt.Sprintf("data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word %d \"}}]}\n\n", n)
		resp.Events = append(resp.Events, cassette.Event{AtMillis: float64(n), Data: []byte(data)})
	}
	want := resp.Bytes()
	h := replayServer(b, reqBody, resp)
	b.ReportAllocs()
	defer reportGC(b)()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(reqBody))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK || w.Body.Len() != len(want) {
			b.Fatalf("status %d, %d bytes, want %d", w.Code, w.Body.Len(), len(want))
		}
	}
}

// replayServer is a replaying proxy over a cassette holding one recording of
// reqBody, made through each of the default and openai upstreams, served
// again and again.
func replayServer(b *testing.B, reqBody []byte, resp cassette.Response) *proxy.Server {
	return replayServerAt(b, "/v1/chat/completions", wire.KindOpenAIChat, reqBody, resp)
}

// replayServerAt is replayServer for a request to reqPath of kind.
func replayServerAt(b *testing.B, reqPath string, kind wire.Kind, reqBody []byte, resp cassette.Response) *proxy.Server {
	path := cassettePath(b)
	c, err := cassette.Open(path, cassette.Options{Version: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	m, err := cassette.DefaultIndexer() // the index a replay server reads as it is
	if err != nil {
		b.Fatal(err)
	}
	ct := &cassette.Contents{Meta: store.Meta{IndexRules: m.Fingerprint()}}
	for _, up := range []string{cassette.DefaultUpstream, "openai"} {
		ct.Interactions = append(ct.Interactions, &cassette.Interaction{
			Upstream: up, Provider: kind.Provider(), Kind: string(kind),
			Request: cassette.Request{Method: http.MethodPost, Path: reqPath,
				Headers: http.Header{"Content-Type": {"application/json"}}, Body: reqBody},
			Response: resp,
		})
	}
	if err := c.Replace(ct, m.Keys); err != nil {
		b.Fatal(err)
	}
	if err := c.Close(); err != nil {
		b.Fatal(err)
	}
	c, err = cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
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
