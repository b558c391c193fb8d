package view_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/view"
)

// benchCassette writes n chat interactions of about 1 KB each.
func benchCassette(b *testing.B, n int) *cassette.Cassette {
	b.Helper()
	c, err := cassette.Open(filepath.Join(b.TempDir(), "bench.cassette"), cassette.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	const batch = 5000
	for start := 0; start < n; start += batch {
		var items []cassette.Keyed
		for k := start; k < min(n, start+batch); k++ {
			req := fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Question number %d: what is the weather in Paris today, and should I take an umbrella?"}]}`, k)
			resp := fmt.Sprintf(`{"id":"chatcmpl-%d","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"weather","arguments":"{\"location\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":40,"completion_tokens":12,"total_tokens":52}}`, k, k)
			i := &cassette.Interaction{Upstream: "default", Provider: "openai", Kind: "openai-chat",
				Request:  cassette.Request{Method: "POST", Path: "/v1/chat/completions", Body: []byte(req), Headers: http.Header{"Content-Type": {"application/json"}}},
				Response: cassette.Response{Status: 200, Body: []byte(resp), Headers: http.Header{"Content-Type": {"application/json"}}, TTFBMillis: 300, DurationMillis: 301}}
			items = append(items, cassette.Keyed{Interaction: i, Key: fmt.Sprint(k), Shape: "s"})
		}
		if _, err := c.AppendAll(items); err != nil {
			b.Fatal(err)
		}
	}
	return c
}

// BenchmarkFirstPage serves the interactions table's first page of a
// 100-interaction and of a 100 000-interaction cassette, and a filtered
// page of the large one: paging reads one page, whatever the size, and a
// filter reads at most its scan limit.
func BenchmarkFirstPage(b *testing.B) {
	for _, tc := range []struct {
		n     int
		query string
	}{
		{100, ""},
		{100_000, ""},
		{100_000, "?after=99950"},
		{100_000, "?q=weather+chat"},
		{100_000, "?q=nothing-matches"},
	} {
		b.Run(fmt.Sprintf("interactions=%d%s", tc.n, strings.ReplaceAll(tc.query, "?", "/")), func(b *testing.B) {
			h, err := view.New(view.Options{Source: view.CassetteSource{C: benchCassette(b, tc.n)}})
			if err != nil {
				b.Fatal(err)
			}
			target := "http://127.0.0.1/_llmproxy/ui/" + tc.query
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
				if w.Code != http.StatusOK {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}
