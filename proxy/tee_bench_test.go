package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// eventReader hands out one event per Read, as a streaming upstream that
// flushes each event does.
type eventReader struct {
	events [][]byte
	next   int
}

func (r *eventReader) Read(p []byte) (int, error) {
	if r.next == len(r.events) {
		return 0, io.EOF
	}
	n := copy(p, r.events[r.next])
	r.next++
	return n, nil
}

// BenchmarkTeeSSE times the tee of a 200-event SSE stream read event by
// event: each event sent on to the client and collected for the recording.
// Its allocations are the recording's cost per stream, which sets how often
// a long stream's proxy collects garbage.
func BenchmarkTeeSSE(b *testing.B) {
	events := make([][]byte, 200)
	for n := range events {
		events[n] = fmt.Appendf(nil, "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word %d \"}}]}\n\n", n)
	}
	s := &Server{cfg: Config{MaxResponse: 1 << 30, UpstreamTimeout: time.Minute}}
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}}}
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		watch := s.watchUpstream(context.Background())
		body := newUpstreamBody(&eventReader{events: events}, false)
		c := startResponse(w, resp, false)
		rec := newTeeStream(resp.Header, time.Now())
		if f := s.tee(resp.StatusCode, body, c, rec, watch); f != nil {
			b.Fatal(f.note)
		}
		body.release()
		watch.stop()
		if len(rec.events) != len(events) {
			b.Fatalf("%d events recorded, want %d", len(rec.events), len(events))
		}
	}
}
