package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/llmproxy/llmproxy/proxy"
)

// headerUpstream is an httptest upstream that keeps the path and headers
// of every request it gets and answers a small chat completion.
type headerUpstream struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []seenRequest
}

// seenRequest is what headerUpstream saw of one request.
type seenRequest struct {
	path   string
	header http.Header
}

func newHeaderUpstream(t *testing.T) *headerUpstream {
	u := &headerUpstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.got = append(u.got, seenRequest{path: r.URL.EscapedPath(), header: r.Header.Clone()})
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`))
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *headerUpstream) requests() []seenRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seenRequest(nil), u.got...)
}

// TestProxyAuthorizationNeverForwarded: Proxy-Authorization (and
// Proxy-Authenticate, Proxy-Connection) are for the proxy the client talks
// to, hop-by-hop (RFC 9110 §11.7): the upstream never gets them, whether a
// Connection header names them or not, while Authorization still goes.
func TestProxyAuthorizationNeverForwarded(t *testing.T) {
	for _, mode := range []proxy.Mode{proxy.ModeRecord, proxy.ModeAuto} {
		t.Run(mode.String(), func(t *testing.T) {
			up := newHeaderUpstream(t)
			h := startProxy(t, mode, cassettePath(t), up.srv.URL)
			for _, conn := range []string{"", "keep-alive"} {
				body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi ` + conn + `"}]}` // two requests, so auto records both
				headers := []string{"Authorization", "Bearer sk-upstream", "Proxy-Authorization", "Basic " + canary + "-proxy",
					"Proxy-Authenticate", "Basic realm=" + canary}
				if conn != "" {
					headers = append(headers, "Connection", conn)
				}
				if got := send(t, h.URL(), "/v1/chat/completions", body, headers...); got.status != 200 {
					t.Fatalf("status %d: %s", got.status, got.body)
				}
			}
			seen := up.requests()
			if len(seen) != 2 {
				t.Fatalf("the upstream got %d requests, want 2", len(seen))
			}
			for _, r := range seen {
				for k, vs := range r.header {
					if strings.HasPrefix(k, "Proxy-") || strings.Contains(strings.Join(vs, " "), canary) {
						t.Errorf("the upstream got %s: %q", k, vs)
					}
				}
				if r.header.Get("Authorization") != "Bearer sk-upstream" {
					t.Errorf("the upstream did not get Authorization: %v", r.header)
				}
			}
		})
	}
}
