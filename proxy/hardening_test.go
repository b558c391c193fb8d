package proxy_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/proxy"
)

// sseUpstream streams n chat chunks, one every gap, then [DONE].
func sseUpstream(t *testing.T, n int, gap time.Duration) string {
	return rawUpstream(t, func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < n; i++ {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%d\"}}]}\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-time.After(gap):
			case <-done:
				return
			}
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
}

// stallingWriter is a client that stops reading once, for stall, after its
// first few writes.
type stallingWriter struct {
	*httptest.ResponseRecorder
	writes int
	stall  time.Duration
}

func (s *stallingWriter) Write(p []byte) (int, error) {
	s.writes++
	if s.writes == 3 {
		time.Sleep(s.stall)
	}
	return s.ResponseRecorder.Write(p)
}

// A client that pauses longer than --upstream-timeout mid-stream is not
// the upstream's silence: its stream completes and is recorded.
func TestSlowClientIsNotUpstreamSilence(t *testing.T) {
	up := sseUpstream(t, 8, 20*time.Millisecond)
	h := startProxy(t, proxy.ModeRecord, cassettePath(t), up, func(c *proxy.Config) {
		c.UpstreamTimeout = 200 * time.Millisecond
	})
	w := &stallingWriter{ResponseRecorder: httptest.NewRecorder(), stall: 700 * time.Millisecond}
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(chatStreamAPI.body))
	req.Header.Set("Content-Type", "application/json")
	h.p.ServeHTTP(w, req)
	if !strings.HasSuffix(w.Body.String(), "data: [DONE]\n\n") {
		t.Fatalf("the slow client's stream was cut: %q", w.Body.String())
	}
	settle(t, h.URL(), 1)
	if n := interactionCount(t, h.c); n != 1 {
		t.Errorf("%d interactions recorded, want 1", n)
	}
}
