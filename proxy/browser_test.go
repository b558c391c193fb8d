package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
)

// TestHostAndOriginChecks: the API answers only loopback or the
// listener's own Host, and every route refuses a browser Origin that is
// neither loopback nor allowed.
func TestHostAndOriginChecks(t *testing.T) {
	up := fake.New(t, fake.OpenAIChat(weatherLoop))
	h := startProxy(t, proxy.ModeRecord, cassettePath(t), up.URL(), func(c *proxy.Config) {
		c.AllowOrigins = []string{"https://app.example.test"}
	})
	const chat = `{"model":"m","messages":[{"role":"user","content":"What's the weather in Paris?"}]}`
	tests := []struct {
		name, method, path, host, origin, body string
		want                                   int
		wantIn                                 string
	}{
		{"api loopback host", "GET", "/_llmproxy/health", "", "", "", 200, ""},
		{"api localhost", "GET", "/_llmproxy/health", "localhost:7878", "", "", 200, ""},
		{"api ipv6 loopback", "GET", "/_llmproxy/health", "[::1]:7878", "", "", 200, ""},
		{"api rebinding host", "GET", "/_llmproxy/log", "evil.example:7878", "", "", 403, "Host"},
		{"api foreign origin", "GET", "/_llmproxy/log", "", "http://evil.example", "", 403, "Origin"},
		{"api loopback origin", "GET", "/_llmproxy/health", "", "http://localhost:5173", "", 200, ""},
		{"api allowed origin", "GET", "/_llmproxy/health", "", "https://app.example.test", "", 200, ""},
		{"proxied foreign origin text/plain", "POST", "/v1/chat/completions", "", "http://evil.example", chat, 403, "--allow-origin"},
		{"proxied null origin", "POST", "/v1/chat/completions", "", "null", chat, 403, "Origin"},
		{"proxied foreign host is fine", "POST", "/v1/chat/completions", "evil.example", "", chat, 200, ""},
		{"proxied loopback origin", "POST", "/v1/chat/completions", "", "http://127.0.0.1:5173", chat, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			req.RemoteAddr = "127.0.0.1:5555"
			req.Host = "127.0.0.1:7878"
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			req.Header.Set("Content-Type", "text/plain")
			rec := httptest.NewRecorder()
			h.p.ServeHTTP(rec, req)
			if rec.Code != tc.want || !strings.Contains(rec.Body.String(), tc.wantIn) {
				t.Errorf("%d %s, want %d with %q", rec.Code, rec.Body, tc.want, tc.wantIn)
			}
			if tc.want == 200 && tc.origin != "" {
				if got := rec.Header().Get("Access-Control-Allow-Origin"); got != tc.origin {
					t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tc.origin)
				}
				if !strings.Contains(rec.Header().Get("Vary"), "Origin") {
					t.Errorf("Vary %q lacks Origin", rec.Header().Get("Vary"))
				}
				if !strings.Contains(rec.Header().Get("Access-Control-Expose-Headers"), proxy.MissHeader) {
					t.Errorf("Access-Control-Expose-Headers %q lacks %s", rec.Header().Get("Access-Control-Expose-Headers"), proxy.MissHeader)
				}
			}
		})
	}
	// Only the two allowed proxied POSTs and the foreign-Host one were recorded.
	h.p.Close() // writes what is behind
	n := 0
	h.c.ForEach(func(*cassette.Interaction) error { n++; return nil })
	if n != 2 {
		t.Errorf("%d interactions recorded, want 2 (refused browser requests are never recorded)", n)
	}
}

// TestCORSPreflight: an allowed origin's preflight is answered by the
// proxy, never forwarded, echoing what the browser asks for.
func TestCORSPreflight(t *testing.T) {
	h := startProxy(t, proxy.ModeRecord, cassettePath(t), "", func(c *proxy.Config) { c.Transport = forbidden{t} })
	asked := "authorization, content-type, x-api-key, anthropic-version, x-stainless-os, x-stainless-retry-count"
	for _, path := range []string{"/v1/chat/completions", "/anthropic/v1/messages", "/_llmproxy/log"} {
		req := httptest.NewRequest("OPTIONS", path, nil)
		req.Host = "127.0.0.1:7878"
		req.Header.Set("Origin", "http://localhost:5173")
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", asked)
		rec := httptest.NewRecorder()
		h.p.ServeHTTP(rec, req)
		hd := rec.Header()
		if rec.Code != http.StatusNoContent || hd.Get("Access-Control-Allow-Origin") != "http://localhost:5173" ||
			!strings.Contains(hd.Get("Access-Control-Allow-Methods"), "POST") ||
			hd.Get("Access-Control-Allow-Headers") != asked || hd.Get("Access-Control-Max-Age") == "" {
			t.Errorf("preflight %s: %d %v", path, rec.Code, hd)
		}
		req.Header.Set("Origin", "http://evil.example")
		rec = httptest.NewRecorder()
		h.p.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden || rec.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("foreign preflight %s: %d %v", path, rec.Code, rec.Header())
		}
	}
}
