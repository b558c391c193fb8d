package proxy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

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
