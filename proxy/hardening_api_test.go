package proxy_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/proxy"
)

// heldStream is an upstream that sends one SSE event and then holds the
// stream open until release is closed.
func heldStream(t *testing.T) (url string, release func()) {
	t.Helper()
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-hold:
		case <-r.Context().Done():
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	var closed bool
	return srv.URL, func() {
		if !closed {
			closed = true
			close(hold)
		}
	}
}

// startHeld starts a streamed chat request through the proxy at base and
// returns once its first event arrived; the stream stays open.
func startHeld(t *testing.T, base, cassetteName string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("Content-Type", "application/json")
	if cassetteName != "" {
		req.Header.Set(proxy.CassetteHeader, cassetteName)
	}
	first := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- err
			return
		}
		defer resp.Body.Close()
		_, err = bufio.NewReader(resp.Body).ReadString('\n')
		first <- err
		io.Copy(io.Discard, resp.Body)
	}()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

// TestAPIDoesNotWaitForRecordings: the API answers from what is written
// while a recording streams, on the same cassette and on others.
func TestAPIDoesNotWaitForRecordings(t *testing.T) {
	for _, dir := range []bool{false, true} {
		name := map[bool]string{false: "cassette", true: "cassette-dir"}[dir]
		t.Run(name, func(t *testing.T) {
			up, release := heldStream(t)
			defer release()
			var base, cas string
			if dir {
				d := t.TempDir()
				base, _ = startDirProxy(t, proxy.ModeRecord, d, up)
				cas = "a"
			} else {
				base = startProxy(t, proxy.ModeRecord, cassettePath(t), up).URL()
			}
			startHeld(t, base, cas)
			for _, p := range []string{"/_llmproxy/log", "/_llmproxy/interactions", "/_llmproxy/unused"} {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				req, _ := http.NewRequestWithContext(ctx, "GET", base+p, nil)
				if dir {
					req.Header.Set(proxy.CassetteHeader, cas)
				}
				resp, err := http.DefaultClient.Do(req)
				cancel()
				if err != nil {
					t.Fatalf("GET %s while a recording streams: %v (it waited for the recording)", p, err)
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("GET %s: %d", p, resp.StatusCode)
				}
			}
		})
	}
}
