package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/faults"
	"github.com/llmproxy/llmproxy/proxy"
)

// The cost of faults on demand (docs/faults.md): replay with a fault
// configured against replay without, in the same run. With no fault
// configured the replay path must cost nothing measurable (compare
// BenchmarkHandlerReplayJSON and SSE with the same benchmarks before
// faults); with --fault 429@rate=0.1 a tenth of the requests are answered
// the provider's 429 instead of the recording.

// faultReplay is a replay handler over the benchmarks' cassette injecting
// specs (none: no fault configured).
func faultReplay(b testing.TB, specs ...string) http.Handler {
	b.Helper()
	path := filepath.Join(b.TempDir(), "replay.cassette")
	if err := buildReplayCassette(path); err != nil {
		b.Fatal(err)
	}
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	fs, err := faults.ParseAll(specs)
	if err != nil {
		b.Fatal(err)
	}
	p, err := proxy.New(proxy.Config{Cassette: c, OnExhausted: proxy.ExhaustedRepeatLast, Transport: refuse{},
		Faults: faults.Plan{Seed: 1, Faults: fs}})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// serveFaulted is serveOnce, a 429 being an answer too.
func serveFaulted(b *testing.B, h http.Handler, body []byte) {
	r := httptest.NewRequest(http.MethodPost, chatPath, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK && w.Code != http.StatusTooManyRequests {
		b.Fatalf("status %d: %s", w.Code, w.Body)
	}
	_, _ = io.Copy(io.Discard, w.Body)
}

func benchFaulted(b *testing.B, h http.Handler, stream bool) {
	body := requestBody(0, stream)
	b.ReportAllocs()
	for b.Loop() {
		serveFaulted(b, h, body)
	}
}

func BenchmarkFaultNoneJSON(b *testing.B) { benchFaulted(b, faultReplay(b), false) }
func BenchmarkFault429JSON(b *testing.B)  { benchFaulted(b, faultReplay(b, "429@rate=0.1"), false) }
func BenchmarkFaultNoneSSE(b *testing.B)  { benchFaulted(b, faultReplay(b), true) }
func BenchmarkFault429SSE(b *testing.B)   { benchFaulted(b, faultReplay(b, "429@rate=0.1"), true) }

// BenchmarkFault64Conns is the throughput of 64 concurrent keep-alive
// clients over loopback HTTP: the bare handler, replay, and replay with
// --fault 429@rate=0.1; ns/op is the time per request of the whole
// server, so the ratio of two is their throughput ratio.
func BenchmarkFault64Conns(b *testing.B) {
	for _, tc := range []struct {
		name string
		h    func(b *testing.B) http.Handler
	}{
		{"bare", func(*testing.B) http.Handler { return newUpstream() }},
		{"replay", func(b *testing.B) http.Handler { return faultReplay(b) }},
		{"replay-429-rate-0.1", func(b *testing.B) http.Handler { return faultReplay(b, "429@rate=0.1") }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv := httptest.NewServer(tc.h(b))
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}}
			body := requestBody(0, false)
			b.SetParallelism(32) // 64 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Post(srv.URL+chatPath, "application/json", bytes.NewReader(body))
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusTooManyRequests {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
		})
	}
}
