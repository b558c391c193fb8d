package wire_test

import (
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

// TestSplitterFinish ends streams of each line ending, pushed the way an
// upstream flushes them (one event per read): the end of the body completes
// an SSE event whose blank line is a bare CR, and only a truly unfinished
// event is left over.
func TestSplitterFinish(t *testing.T) {
	for _, tc := range []struct {
		name   string
		f      wire.Framing
		chunks []string
		events int
		rest   string
	}{
		{"SSE, LF", wire.FramingSSE, []string{"data: a\n\n", "data: [DONE]\n\n"}, 2, ""},
		{"SSE, CRLF", wire.FramingSSE, []string{"data: a\r\n\r\n", "data: [DONE]\r\n\r\n"}, 2, ""},
		{"SSE, CR", wire.FramingSSE, []string{"data: a\r\r", "data: [DONE]\r\r"}, 2, ""},
		{"SSE, CR, one chunk", wire.FramingSSE, []string{"event: x\rdata: a\r\rdata: [DONE]\r\r"}, 2, ""},
		{"SSE, CR, cut mid-event", wire.FramingSSE, []string{"data: a\r\r", "data: [DO"}, 1, "data: [DO"},
		{"SSE, CR, no blank line", wire.FramingSSE, []string{"data: a\r\r", "data: b\r"}, 1, "data: b\r"},
		{"NDJSON, last line without LF", wire.FramingNDJSON, []string{"{\"a\":1}\n", "{\"done\":true}"}, 1, "{\"done\":true}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := wire.NewSplitter(tc.f)
			var body, got []byte
			n := 0
			for _, c := range tc.chunks {
				body = append(body, c...)
				evs := s.Push([]byte(c))
				n += len(evs)
				got = append(got, concatRaw(evs)...)
			}
			evs, rest := s.Finish()
			n += len(evs)
			got = append(append(got, concatRaw(evs)...), rest...)
			if n != tc.events || string(rest) != tc.rest {
				t.Errorf("%d events and rest %q, want %d and %q", n, rest, tc.events, tc.rest)
			}
			if string(got) != string(body) {
				t.Errorf("events and rest concatenate to %q, want the body %q", got, body)
			}
		})
	}
}
