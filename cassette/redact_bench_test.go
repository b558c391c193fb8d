package cassette_test

import (
	"net/http"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
)

// BenchmarkRedactLive is the redaction a replayed request pays before it is
// matched: its headers (as a Go client sends them, with a bearer token) and
// its body, a captured chat request without any key.
func BenchmarkRedactLive(b *testing.B) {
	r, err := cassette.NewRedactor(nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	h := http.Header{
		"Content-Type": {"application/json"}, "Authorization": {"Bearer sk-bench"}, "User-Agent": {"Go-http-client/1.1"},
		"Accept-Encoding": {"gzip"}, "Content-Length": {"801"},
	}
	body := fake.Captured("openai-chat-toolcalls.request.json")
	b.Run("headers", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.Headers(h)
		}
	})
	b.Run("body", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			r.Body(body)
		}
	})
	b.Run("path+query", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.Path("/v1/chat/completions")
			r.Query("")
		}
	})
}
