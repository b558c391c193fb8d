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
	// What replay copies: the headers its matcher reads (Content-Type),
	// from the Go client's and from the headers the openai Node SDK sends.
	node := http.Header{
		"Content-Type": {"application/json"}, "Authorization": {"Bearer sk-bench"}, "User-Agent": {"OpenAI/JS 6.7.0"},
		"Accept": {"application/json"}, "Accept-Encoding": {"gzip, deflate"}, "Content-Length": {"801"},
		"X-Stainless-Lang": {"js"}, "X-Stainless-Package-Version": {"6.7.0"}, "X-Stainless-Os": {"Linux"},
		"X-Stainless-Arch": {"x64"}, "X-Stainless-Runtime": {"node"}, "X-Stainless-Runtime-Version": {"v20.19.2"},
		"X-Stainless-Retry-Count": {"0"}, "X-Stainless-Timeout": {"600"}, "Connection": {"keep-alive"},
	}
	for name, h := range map[string]http.Header{"go": h, "node": node} {
		out := http.Header{}
		b.Run("headers-all-"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out = r.HeadersInto(out, h)
			}
		})
		b.Run("headers-read-"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out = r.HeadersOnlyInto(out, h, []string{"Content-Type"})
			}
		})
	}
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
