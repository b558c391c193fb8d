package jsonvalue_test

import (
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/internal/jsonvalue"
)

// BenchmarkAppendCanonicalBytes is the one-pass scan alone, over every
// request body captured from the providers, into a reused buffer.
func BenchmarkAppendCanonicalBytes(b *testing.B) {
	var docs [][]byte
	size := 0
	for _, name := range fake.CapturedFiles() {
		if strings.HasSuffix(name, ".request.json") {
			d := fake.Captured(name)
			docs = append(docs, d)
			size += len(d)
		}
	}
	for _, c := range []struct {
		name string
		ig   jsonvalue.Ignore
	}{{"no-rules", nil}, {"ignore-rules", ignoreOf(b, "metadata", "messages.#.tool_calls.#.id")}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			var out []byte
			for b.Loop() {
				for _, d := range docs {
					var ok bool
					if out, ok = c.ig.AppendCanonicalBytes(out[:0], d); !ok {
						b.Fatalf("refused %.100q", d)
					}
				}
			}
		})
	}
}
