package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/proxy"
)

// agentRequest is an OpenAI chat request of an agent's conversation: a
// user turn saying n, then one assistant turn calling results tools, then
// their results of size bytes each (about 200 KB for 50 of 4 000).
func agentRequest(n, results, size int) []byte {
	msgs := []any{map[string]any{"role": "user", "content": fmt.Sprintf("task %d: look everything up", n)}}
	calls := make([]any, results)
	for k := range calls {
		calls[k] = map[string]any{"id": fmt.Sprintf("call_%d", k), "type": "function",
			"function": map[string]any{"name": "lookup", "arguments": fmt.Sprintf(`{"item":%d}`, k)}}
	}
	msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": calls})
	for k := range results {
		msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": fmt.Sprintf("call_%d", k),
			"content": fmt.Sprintf("result %d of task %d: ", k, n) + strings.Repeat("x", size)})
	}
	b, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "messages": msgs})
	return b
}

// agentCassette records n agent requests (see agentRequest) into a new
// cassette and returns its path.
func agentCassette(b *testing.B, n, results, size int) string {
	b.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`)
	}))
	defer up.Close()
	path := cassettePath(b)
	rec := startProxy(b, proxy.ModeRecord, path, up.URL)
	for k := range n {
		serveLocal(b, rec.p, http.MethodPost, "/v1/chat/completions", agentRequest(k, results, size), http.StatusOK)
	}
	rec.stop()
	return path
}

// serveLocal serves one request in process and returns the answer's body.
func serveLocal(b testing.TB, h http.Handler, method, path string, body []byte, want int) []byte {
	b.Helper()
	r := httptest.NewRequest(method, "http://127.0.0.1"+path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != want {
		b.Fatalf("%s %s: status %d, want %d: %.300s", method, path, w.Code, want, w.Body)
	}
	return w.Body.Bytes()
}

// liveHeapMB is the heap in use after a collection, in MB.
func liveHeapMB() float64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}

// BenchmarkJournalAgentLog is the hostile tester's journal case at a
// smaller scale: 600 replayed agent requests of about 200 KB with 50 tool
// results each, then GET /_llmproxy/log. It reports the bytes of one GET
// /_llmproxy/log as a client asks it (log-bytes), those of the whole
// journal read page by page (log-all-bytes), and the heap in use after
// each (heap-MB after the replays, log-heap-MB after the one GET, all-heap-MB
// after reading it all): what the journal keeps.
func BenchmarkJournalAgentLog(b *testing.B) {
	const n = 600
	path := agentCassette(b, n, 50, 4000)
	for b.Loop() {
		b.StopTimer()
		h := startProxy(b, proxy.ModeReplay, path, "")
		for k := range n {
			serveLocal(b, h.p, http.MethodPost, "/v1/chat/completions", agentRequest(k, 50, 4000), http.StatusOK)
		}
		base := liveHeapMB()
		b.StartTimer()
		one := serveLocal(b, h.p, http.MethodGet, "/_llmproxy/log", nil, http.StatusOK)
		b.StopTimer()
		afterOne := liveHeapMB()
		all, after := 0, uint64(0)
		for {
			page := serveLocal(b, h.p, http.MethodGet, fmt.Sprintf("/_llmproxy/log?after=%d&limit=1000", after), nil, http.StatusOK)
			all += len(page)
			var p struct {
				Entries []struct{ Seq uint64 } `json:"entries"`
			}
			if err := json.Unmarshal(page, &p); err != nil {
				b.Fatal(err)
			}
			if len(p.Entries) == 0 {
				break
			}
			after = p.Entries[len(p.Entries)-1].Seq
		}
		b.ReportMetric(float64(len(one)), "log-bytes")
		b.ReportMetric(float64(all), "log-all-bytes")
		b.ReportMetric(base, "heap-MB")
		b.ReportMetric(afterOne, "log-heap-MB")
		b.ReportMetric(liveHeapMB(), "all-heap-MB")
		h.stop()
		b.StartTimer()
	}
}

// missRequest is agent request n (see agentRequest) with one tool result
// changed: a miss whose closest recording is n.
func missRequest(n int) []byte {
	return bytes.Replace(agentRequest(n, 50, 4000), []byte("result 7 of"), []byte("result 8 of"), 1)
}

// cpuSeconds is the process's user and system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// peakHeap samples the heap in use until stop is closed and returns the
// highest figure seen, in MB.
func peakHeap(stop <-chan struct{}) <-chan float64 {
	out := make(chan float64, 1)
	go func() {
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		peak := 0.0
		for {
			metrics.Read(sample)
			peak = max(peak, float64(sample[0].Value.Uint64())/(1<<20))
			select {
			case <-stop:
				out <- peak
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return out
}

// BenchmarkMissAgent is the hostile tester's miss case at a smaller scale:
// a replay of 600 agent requests of about 200 KB, asked requests that each
// differ from one recording in one tool result. "one" explains one miss
// at a time (cpu-ms/miss, B/op); "32-at-once" sends 32 at once and reports
// the wall time of the 32 (ms/32), the CPU they took (cpu-ms/32) and the
// peak heap meanwhile (peak-heap-MB).
func BenchmarkMissAgent(b *testing.B) {
	const n = 600
	path := agentCassette(b, n, 50, 4000)
	h := startProxy(b, proxy.ModeReplay, path, "")
	misses := make([][]byte, 32)
	for k := range misses {
		misses[k] = missRequest(k * 17 % n)
	}
	b.Run("one", func(b *testing.B) {
		b.ReportAllocs()
		cpu, k := cpuSeconds(), 0
		for b.Loop() {
			serveLocal(b, h.p, http.MethodPost, "/v1/chat/completions", misses[k%len(misses)], http.StatusBadRequest)
			k++
		}
		b.ReportMetric((cpuSeconds()-cpu)*1000/float64(b.N), "cpu-ms/miss")
	})
	b.Run("32-at-once", func(b *testing.B) {
		var wall, cpu, peak float64
		for b.Loop() {
			runtime.GC()
			stop := make(chan struct{})
			sampled := peakHeap(stop)
			start, cpu0 := time.Now(), cpuSeconds()
			var wg sync.WaitGroup
			for _, m := range misses {
				wg.Go(func() { serveLocal(b, h.p, http.MethodPost, "/v1/chat/completions", m, http.StatusBadRequest) })
			}
			wg.Wait()
			wall += time.Since(start).Seconds() * 1000
			cpu += (cpuSeconds() - cpu0) * 1000
			close(stop)
			peak = max(peak, <-sampled)
		}
		b.ReportMetric(wall/float64(b.N), "ms/32")
		b.ReportMetric(cpu/float64(b.N), "cpu-ms/32")
		b.ReportMetric(peak, "peak-heap-MB")
	})
}

// BenchmarkRecordBehindLongStream is the hostile tester's write-behind
// case at a smaller scale: one stream held open while 600 agent requests
// of about 200 KB are recorded behind it. It reports the live heap once
// they are answered (heap-MB) and the interactions written meanwhile
// (written-before-end).
func BenchmarkRecordBehindLongStream(b *testing.B) {
	for b.Loop() {
		release := make(chan struct{})
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"stream":true`)) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "data: first\n\n")
				w.(http.Flusher).Flush()
				<-release
				_, _ = io.WriteString(w, "data: [DONE]\n\n")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`)
		}))
		h := startProxy(b, proxy.ModeRecord, cassettePath(b), up.URL)
		resp, err := http.Post(h.URL()+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"long"}]}`))
		if err != nil {
			b.Fatal(err)
		}
		line := make([]byte, 8)
		if _, err := io.ReadFull(resp.Body, line); err != nil {
			b.Fatal(err)
		}
		for k := range 600 {
			serveLocal(b, h.p, http.MethodPost, "/v1/chat/completions", agentRequest(k, 50, 4000), http.StatusOK)
		}
		b.ReportMetric(liveHeapMB(), "heap-MB")
		n, err := h.c.Len()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n), "written-before-end")
		close(release)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		h.stop()
		up.Close()
	}
}

// BenchmarkReplayWithLiveStreams times replayed requests while N browser
// tabs hold the live log open (each an SSE stream of
// /_llmproxy/ui/log/events, read to its end): what idle subscribers cost
// the requests.
func BenchmarkReplayWithLiveStreams(b *testing.B) {
	path := agentCassette(b, 50, 5, 1000)
	for _, n := range []int{0, 50} {
		b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) {
			h := startProxy(b, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.OnExhausted = proxy.ExhaustedRepeatLast })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for range n {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.URL()+"/_llmproxy/ui/log/events", nil)
				resp, err := http.DefaultClient.Do(req)
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("live stream: %v %v", err, resp)
				}
				go func() { _, _ = io.Copy(io.Discard, resp.Body); resp.Body.Close() }()
			}
			reqs := make([][]byte, 50)
			for k := range reqs {
				reqs[k] = agentRequest(k, 5, 1000)
			}
			k := 0
			for b.Loop() {
				serveLocal(b, h.p, http.MethodPost, "/v1/chat/completions", reqs[k%len(reqs)], http.StatusOK)
				k++
			}
		})
	}
}
