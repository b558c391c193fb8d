package wire_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

// benchStream is a 200-event stream of the given framing in the shape of
// OpenAI chat chunks (about 350 bytes an event), with CRLF line ends when
// crlf is set (as Gemini sends).
func benchStream(f wire.Framing, crlf bool) []byte {
	nl := "\n"
	if crlf {
		nl = "\r\n"
	}
	var b strings.Builder
	for i := range 200 {
		chunk := fmt.Sprintf(`{"id":"chatcmpl-Dx0XpqH8w09uBXwq1zFGYdETjtnEl","object":"chat.completion.chunk","created":1782955817,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":" token%d"},"logprobs":null,"finish_reason":null}],"usage":null}`, i)
		if f == wire.FramingNDJSON {
			b.WriteString(chunk + nl)
			continue
		}
		b.WriteString("data: " + chunk + nl + nl)
	}
	return []byte(b.String())
}

// BenchmarkSplit cuts a whole 200-event body into events.
func BenchmarkSplit(b *testing.B) {
	for _, tc := range []struct {
		name string
		f    wire.Framing
		crlf bool
	}{{"sse", wire.FramingSSE, false}, {"sse-crlf", wire.FramingSSE, true}, {"ndjson", wire.FramingNDJSON, false}} {
		b.Run(tc.name, func(b *testing.B) {
			body := benchStream(tc.f, tc.crlf)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if evs := wire.Split(tc.f, body); len(evs) != 200 {
					b.Fatalf("%d events", len(evs))
				}
			}
		})
	}
}

// BenchmarkSplitterPush feeds a 200-event SSE body to a Splitter in reads of
// a fixed size, as the record tee does: one event per read (an upstream
// flushing each event), 1460-byte segments, and 32 KB reads.
func BenchmarkSplitterPush(b *testing.B) {
	body := benchStream(wire.FramingSSE, false)
	evLen := len(body) / 200
	for _, size := range []int{evLen, 1460, 32 << 10} {
		b.Run(fmt.Sprintf("chunk-%d", size), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				s := wire.NewSplitter(wire.FramingSSE)
				n := 0
				for off := 0; off < len(body); off += size {
					n += len(s.Push(body[off:min(off+size, len(body))]))
				}
				n += len(s.End())
				if n != 200 {
					b.Fatalf("%d events", n)
				}
			}
		})
	}
}
