package proxy_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/wire"
)

// BenchmarkReplayEventStream replays a 200-message ConverseStream and, in
// the same loop, runs a bare handler that writes the same headers and
// messages, flushing each; every answer is checked byte for byte.
//
//   - http: both served by their own httptest server on loopback, a client
//     reading each whole answer over one kept-alive connection — the
//     measure of docs/performance.md's "200-event SSE, 1 connection" (≥ 0.85×
//     the bare handler's throughput).
//   - in-process: both handlers called with an httptest.ResponseRecorder,
//     no connection: the replay's fixed cost (matching, the cassette read)
//     against writing 200 messages into memory, an upper bound on the
//     ratio.
//
// Rounds interleave the two, alternating which goes first; replay/bare is
// the ratio of the summed times, replay/bare-median the median of the
// rounds' ratios (the median leaves out the rounds in which the process
// waited for one of the 2 shared cores on one side only), and
// throughput-x-bare-median its inverse, the figure the target names.
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
	replay := replayServerAt(b, path, wire.KindBedrockConverse, reqBody, resp)
	bare := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
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
	b.Run("http", func(b *testing.B) {
		rs, bs := httptest.NewServer(replay), httptest.NewServer(bare)
		defer rs.Close()
		defer bs.Close()
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
		defer client.CloseIdleConnections()
		got := make([]byte, 0, len(want))
		run := func(base string) func() time.Duration {
			return func() time.Duration {
				start := time.Now()
				r, err := client.Post(base+path, "application/json", bytes.NewReader(reqBody))
				if err != nil {
					b.Fatal(err)
				}
				buf := bytes.NewBuffer(got[:0])
				_, err = buf.ReadFrom(r.Body)
				r.Body.Close()
				took := time.Since(start)
				if err != nil || r.StatusCode != http.StatusOK || !bytes.Equal(buf.Bytes(), want) {
					b.Fatalf("status %d, %d bytes (%v), want the %d recorded", r.StatusCode, buf.Len(), err, len(want))
				}
				return took
			}
		}
		rounds(b, run(rs.URL), run(bs.URL), len(resp.Events))
	})
	b.Run("in-process", func(b *testing.B) {
		run := func(h http.Handler) func() time.Duration {
			return func() time.Duration {
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
		}
		rounds(b, run(replay), run(bare), len(resp.Events))
	})
}

// rounds times replay and bare once each per benchmark iteration,
// alternating which goes first, and reports the summed and median
// replay/bare ratios.
func rounds(b *testing.B, replay, bare func() time.Duration, messages int) {
	var replayed, baseline time.Duration
	var ratios []float64
	b.ReportAllocs()
	for b.Loop() {
		var r, s time.Duration
		if len(ratios)%2 == 0 {
			s, r = bare(), replay()
		} else {
			r, s = replay(), bare()
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
	b.ReportMetric(float64(messages), "messages")
}
