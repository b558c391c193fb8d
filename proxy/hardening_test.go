package proxy_test

import (
	"fmt"
	"io"
	"net"
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

// A client that sends its headers and then trickles nothing more of its
// body gets 408 and its connection closed after --read-timeout; a slow
// response is not cut by it.
func TestSlowRequestBodyIsClosed(t *testing.T) {
	up := sseUpstream(t, 6, 100*time.Millisecond) // 600 ms, longer than the read timeout
	h := startProxy(t, proxy.ModeRecord, cassettePath(t), up, func(c *proxy.Config) {
		c.ReadTimeout = 200 * time.Millisecond
	})
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"model\":")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("the connection of a stalled body was not closed: %v (read %q)", err, got)
	}
	if !strings.HasPrefix(string(got), "HTTP/1.1 408") || !strings.Contains(string(got), "--read-timeout") {
		t.Errorf("a stalled body got %q, want a 408 naming --read-timeout", got)
	}

	ok := send(t, h.URL(), chatStreamAPI.path, chatStreamAPI.body)
	if ok.status != 200 || ok.readErr != nil || !strings.HasSuffix(string(ok.body), "data: [DONE]\n\n") {
		t.Errorf("a stream longer than the read timeout: %d %v %q", ok.status, ok.readErr, ok.body)
	}
}
