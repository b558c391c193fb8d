package review_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/review"
)

// writeAgents writes a cassette of conversations of four turns each (a
// growing history), n interactions in all; every tenth conversation's
// answers are worded by variant.
func writeAgents(tb testing.TB, path string, n int, variant string) {
	tb.Helper()
	x, err := cassette.DefaultIndexer()
	if err != nil {
		tb.Fatal(err)
	}
	c, err := cassette.Open(path, cassette.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	if err := c.SetIndexRules(x.Fingerprint()); err != nil {
		tb.Fatal(err)
	}
	var batch []cassette.Keyed
	for k := range n {
		conv, turn := k/4, k%4
		msgs := fmt.Sprintf(`{"role":"user","content":"question %d"}`, conv)
		for t := range turn {
			msgs += fmt.Sprintf(`,{"role":"assistant","content":"answer %d"},{"role":"user","content":"follow-up %d"}`, t, t)
		}
		text := fmt.Sprintf("answer %d", turn)
		if conv%10 == 0 {
			text += " " + variant
		}
		i := &cassette.Interaction{Upstream: "openai", Provider: "openai", Kind: "openai-chat",
			RecordedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			Request: cassette.Request{Method: "POST", Path: "/v1/chat/completions",
				Headers: http.Header{"Content-Type": {"application/json"}},
				Body:    cassette.Body(`{"model":"gpt-test","messages":[` + msgs + `]}`)},
			Response: cassette.Response{Status: 200, Headers: http.Header{"Content-Type": {"application/json"}},
				Body: cassette.Body(fmt.Sprintf(`{"id":"chatcmpl-%d","object":"chat.completion","model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":3}}`, k, text))},
		}
		key, shape, err := x.Keys(i)
		if err != nil {
			tb.Fatal(err)
		}
		batch = append(batch, cassette.Keyed{Interaction: i, Key: key, Shape: shape})
		if len(batch) == 5000 || k == n-1 {
			if _, err := c.AppendAll(batch); err != nil {
				tb.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// peakHeap samples the live heap every millisecond while fn runs and
// returns the highest sample, in bytes.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	var peak atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	fn()
	close(done)
	<-stopped
	return peak.Load()
}

// BenchmarkReview diffs two cassettes of 10 000 and of 100 000
// interactions (a tenth of the conversations reworded) and reports the
// peak live heap and the bytes allocated per interaction: the baseline is
// the 10 000 run of the same process, so the ratio of the two peaks shows
// how memory grows with the cassette.
func BenchmarkReview(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := b.TempDir()
			oldPath, newPath := filepath.Join(dir, "old.cassette"), filepath.Join(dir, "new.cassette")
			writeAgents(b, oldPath, n, "indeed")
			writeAgents(b, newPath, n, "for sure")
			old, err := cassette.Open(oldPath, cassette.Options{ReadOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			defer old.Close()
			cur, err := cassette.Open(newPath, cassette.Options{ReadOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			defer cur.Close()
			var peak uint64
			var ms0, ms1 runtime.MemStats
			b.ResetTimer()
			for b.Loop() {
				runtime.ReadMemStats(&ms0)
				p := peakHeap(func() {
					r, err := review.New(context.Background(), old, cur)
					if err != nil {
						b.Fatal(err)
					}
					if err := r.Write(discard{}, review.FormatJSON, "old", "new"); err != nil {
						b.Fatal(err)
					}
					if s := r.Summary(); s.Turns.Wording != n/10 {
						b.Fatalf("summary %+v, want %d wording turns", s, n/10)
					}
				})
				runtime.ReadMemStats(&ms1)
				peak = max(peak, p)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			if st, err := os.Stat(newPath); err == nil {
				b.ReportMetric(float64(st.Size())/(1<<20), "cassette-MB")
			}
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(n), "alloc-B/interaction")
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
