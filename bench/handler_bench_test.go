package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/proxy"
)

// These benchmarks time one request through each handler in process, with
// no network and no client: the server-side CPU of a request, for
// profiling (go test -bench Handler -cpuprofile cpu.out).

func openReplay(b *testing.B, path string) http.Handler {
	b.Helper()
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	p, err := proxy.New(proxy.Config{Cassette: c, OnExhausted: proxy.ExhaustedRepeatLast, Transport: refuse{}})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func replayHandler(b *testing.B) http.Handler {
	path := filepath.Join(b.TempDir(), "replay.cassette")
	if err := buildReplayCassette(path); err != nil {
		b.Fatal(err)
	}
	return openReplay(b, path)
}

func serveOnce(b *testing.B, h http.Handler, body []byte) {
	r := httptest.NewRequest(http.MethodPost, chatPath, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		b.Fatalf("status %d: %s", w.Code, w.Body)
	}
	_, _ = io.Copy(io.Discard, w.Body)
}

// benchHandler also reports cpu-ns/op, the process's CPU time (garbage
// collection included) per request: on the shared cores it moves less
// than the wall time, which counts the time the process waited for one.
func benchHandler(b *testing.B, h http.Handler, stream bool) {
	body := requestBody(0, stream)
	b.ReportAllocs()
	serveOnce(b, h, body) // the first request of a key fills what later ones reuse
	cpu, n := selfCPU(), 0
	for b.Loop() {
		serveOnce(b, h, body)
		n++
	}
	b.ReportMetric(float64(selfCPU()-cpu)/float64(max(n, 1)), "cpu-ns/op")
}

func BenchmarkHandlerBareJSON(b *testing.B)   { benchHandler(b, newUpstream(), false) }
func BenchmarkHandlerReplayJSON(b *testing.B) { benchHandler(b, replayHandler(b), false) }
func BenchmarkHandlerBareSSE(b *testing.B)    { benchHandler(b, newUpstream(), true) }
func BenchmarkHandlerReplaySSE(b *testing.B)  { benchHandler(b, replayHandler(b), true) }

// BenchmarkHandlerReplayScale asks cassettes of several sizes for spread
// recorded requests.
func BenchmarkHandlerReplayScale(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "scale.cassette")
			if err := buildScaleCassette(path, n); err != nil {
				b.Fatal(err)
			}
			h := openReplay(b, path)
			bodies := make([][]byte, 4096)
			for i := range bodies {
				bodies[i] = requestBody((i*7919)%n, false)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				serveOnce(b, h, bodies[i%len(bodies)])
				i++
			}
		})
	}
}

// BenchmarkCassetteGet is the read and decode of a recorded interaction,
// the largest cost of a replayed request.
func BenchmarkCassetteGet(b *testing.B) {
	path := filepath.Join(b.TempDir(), "replay.cassette")
	if err := buildReplayCassette(path); err != nil {
		b.Fatal(err)
	}
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		name string
		id   uint64
	}{{"json", 1}, {"sse", 2}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Get(tc.id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
