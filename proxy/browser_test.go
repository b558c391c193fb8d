package proxy_test

import (
	"context"
	"net"
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
		{"proxied rebinding host", "POST", "/v1/chat/completions", "evil.example", "", chat, 403, "Host"},
		{"proxied GET rebinding host", "GET", "/v1/models", "evil.example:7878", "", "", 403, "--admin-token"},
		{"proxied localhost host", "POST", "/v1/chat/completions", "localhost:7878", "", chat, 200, ""},
		{"proxied loopback origin", "POST", "/v1/chat/completions", "", "http://127.0.0.1:5173", chat, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			// As the listener on 127.0.0.1:7878 hands it over.
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7878}))
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
	// Only the two allowed proxied POSTs were recorded.
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

// TestProxiedRoutesHostRule: without --admin-token every proxied route
// (replay's GETs above all: a DNS-rebound page could read them) answers only
// a loopback Host or the listener's own address, as the API does; with a
// token the Host is not checked on proxied routes, which never needed the
// token.
func TestProxiedRoutesHostRule(t *testing.T) {
	up := newHeaderUpstream(t)
	for _, tc := range []struct {
		token, host string
		want        int
	}{
		{"", "", 200}, // the listener's own address, as httptest's client sends it
		{"", "localhost", 200},
		{"", "app.localhost:1", 200},
		{"", "127.0.0.2", 200},
		{"", "[::1]:7878", 200},
		{"", "evil.example", 403},
		{"", "evil.example:7878", 403},
		{"", "10.0.0.1", 403},
		{"adm", "evil.example", 200},
	} {
		h := startProxy(t, proxy.ModeRecord, cassettePath(t), up.srv.URL, func(c *proxy.Config) { c.AdminToken = tc.token })
		req, _ := http.NewRequest(http.MethodGet, h.URL()+"/v1/models", nil)
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("token %q, Host %q: %d, want %d", tc.token, tc.host, resp.StatusCode, tc.want)
		}
	}
}

// TestWrongAdminTokensWait: a client that sends a wrong admin token more
// than a few times is answered 429 with Retry-After on the API, its right
// token included, without the token being looked at; another client
// address is not held back, and the proxied routes, which need no token,
// still answer it.
func TestWrongAdminTokensWait(t *testing.T) {
	up := newHeaderUpstream(t)
	h := startProxy(t, proxy.ModeRecord, cassettePath(t), up.srv.URL, func(c *proxy.Config) { c.AdminToken = "adm-" + canary })
	api := func(remote, token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/_llmproxy/health", nil)
		req.RemoteAddr = remote
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.p.ServeHTTP(rec, req)
		return rec
	}
	for n := range 6 {
		if rec := api("192.0.2.7:4000", "wrong"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", n+1, rec.Code)
		}
	}
	for _, token := range []string{"wrong", "adm-" + canary} {
		rec := api("192.0.2.7:4001", token)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" {
			t.Errorf("token %q while waiting: %d, Retry-After %q; want 429 after 1 s", token, rec.Code, rec.Header().Get("Retry-After"))
		}
	}
	if rec := api("192.0.2.8:4000", "adm-"+canary); rec.Code != 200 {
		t.Errorf("another client with the token: %d, want 200", rec.Code)
	}
	req := httptest.NewRequest(http.MethodGet, "/v1/models", nil)
	req.RemoteAddr = "192.0.2.7:4002"
	req.Host = "127.0.0.1"
	rec := httptest.NewRecorder()
	h.p.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("a proxied route from the waiting client: %d, want 200", rec.Code)
	}
}
