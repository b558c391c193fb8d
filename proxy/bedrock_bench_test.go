package proxy_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/wire"
)

// BenchmarkReplayEventStream replays a 200-message ConverseStream in
// process, server side only, and in the same loop runs a bare handler
// that writes the same headers and messages, flushing each: the
// replay/bare metric is the ratio of their summed times, replay/bare-median
// the median of the rounds' ratios and throughput-x-bare-median its
// inverse (docs/performance.md asks of SSE ≥ 0.85× the bare handler's
// throughput: a median ratio ≤ 1.18).
func BenchmarkReplayEventStream(b *testing.B) {
	const path = "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream"
	reqBody := []byte(`{"messages":[{"role":"user","content":[{"text":"Tell me a long story."}]}]}`)
	a := wire.Answer{ID: "bench", Text: strings.TrimSpace(strings.Repeat("word ", 196)), Usage: wire.Usage{Input: 5, Output: 196}}
	w, err := wire.Write(wire.KindBedrockConverse, a, wire.WriteOptions{Stream: true})
	if err != nil {
		b.Fatal(err)
	}
	resp := cassette.Response{Status: http.StatusOK, Headers: w.Header, Framing: "eventstream"}
	for n, e := range w.Events {
		resp.Events = append(resp.Events, cassette.Event{AtMillis: float64(n), Data: e.Raw})
	}
	if len(resp.Events) < 200 {
		b.Fatalf("%d messages, want at least 200", len(resp.Events))
	}
	want := resp.Bytes()
	h := replayServerAt(b, path, wire.KindBedrockConverse, reqBody, resp)
	bare := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		r.Body.Read(make([]byte, 512))
		for k, v := range w.Header {
			rw.Header()[k] = v
		}
		rw.WriteHeader(http.StatusOK)
		fl := rw.(http.Flusher)
		for _, e := range resp.Events {
			rw.Write(e.Data)
			fl.Flush()
		}
	})
	run := func(h http.Handler) time.Duration {
		r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(reqBody))
		r.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, r)
		took := time.Since(start)
		if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), want) {
			b.Fatalf("status %d, %d bytes, want the %d recorded", rec.Code, rec.Body.Len(), len(want))
		}
		return took
	}
	// Rounds interleave the two, alternating which goes first; each
	// round's ratio is kept, and the median of those leaves out the rounds
	// in which the process waited for a core (2 shared cores) on one side.
	var replayed, baseline time.Duration
	var ratios []float64
	b.ReportAllocs()
	for b.Loop() {
		var r, s time.Duration
		if len(ratios)%2 == 0 {
			s = run(bare)
			r = run(h)
		} else {
			r = run(h)
			s = run(bare)
		}
		baseline += s
		replayed += r
		ratios = append(ratios, float64(r)/float64(s))
	}
	slices.Sort(ratios)
	med := ratios[len(ratios)/2]
	b.ReportMetric(float64(replayed)/float64(baseline), "replay/bare")
	b.ReportMetric(med, "replay/bare-median")
	b.ReportMetric(1/med, "throughput-x-bare-median")
	b.ReportMetric(float64(len(resp.Events)), "messages")
}
