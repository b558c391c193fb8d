package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/proxy"
)

// rawGet sends one request over a fresh connection with the request target
// exactly as given (no client cleans or escapes it) and returns the answer.
func rawGet(t *testing.T, base, method, target string, header ...string) (int, string) {
	t.Helper()
	host := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var extra strings.Builder
	for i := 0; i+1 < len(header); i += 2 {
		fmt.Fprintf(&extra, "%s: %s\r\n", header[i], header[i+1])
	}
	body := ""
	if method == http.MethodPost {
		body = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	}
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		method, target, host, extra.String(), len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestReservedPathSpellingsNeverForwarded: a path that is, or resolves
// into, /_llmproxy/ — through //, dot segments (literal or escaped), ';' or
// an escaped slash — never reaches an upstream, in any mode, and neither
// does one that would reach an upstream as /_llmproxy/ under its name. The path is cleaned once before routing: what resolves
// into /_llmproxy/ is the proxy's API (behind its own checks), and a
// spelling that some server could read otherwise (an escaped dot segment,
// a ';' in a segment) is a 400 naming the rule.
func TestReservedPathSpellingsNeverForwarded(t *testing.T) {
	const token = "ADMIN-" + canary
	cases := []struct {
		target string
		want   int // the proxy's answer: 200 is the API's
	}{
		{"//_llmproxy/health", 200},
		{"///_llmproxy/health", 200},
		{"/v1/../_llmproxy/health", 200},
		{"/./_llmproxy/health", 200},
		{"/openai/../_llmproxy/log", 200},
		{"/openai/v1/../../_llmproxy/log", 200},
		{"/../_llmproxy/health", 200},
		{"/%2e/_llmproxy/health", 400},
		{"/%2E%2E/_llmproxy/health", 400},
		{"/v1/%2e%2e/_llmproxy/health", 400},
		{"/openai/.%2e/_llmproxy/log", 400},
		{"/v1/%252e%252e/_llmproxy/health", 400},
		{"/v1%2F..%2F_llmproxy/health", 400},
		{"/_llmproxy;/health", 400},
		{"/_llmproxy;x=1/health", 400},
		{"/v1;/../_llmproxy/health", 400},
		{"/openai/..;/_llmproxy/log", 400},
		{"/%2F_llmproxy/health", 400},
		{"/openai/_llmproxy/health", 400},
		{"/openai//_llmproxy/health", 400},
		{"/openai/%2F_llmproxy/health", 400},
		{"/openai/%5fllmproxy/health", 400},
	}
	for _, mode := range []proxy.Mode{proxy.ModeRecord, proxy.ModeAuto, proxy.ModeReplay} {
		t.Run(mode.String(), func(t *testing.T) {
			up := newHeaderUpstream(t)
			path := cassettePath(t)
			if mode == proxy.ModeReplay {
				craft(t, path)
			}
			h := startProxy(t, mode, path, up.srv.URL, func(c *proxy.Config) {
				c.AdminToken = token
				c.Transport = nil // replay must not dial either: the upstream itself counts
			})
			for _, tc := range cases {
				for _, method := range []string{http.MethodGet, http.MethodPost} {
					status, body := rawGet(t, h.URL(), method, tc.target, "Authorization", "Bearer "+token)
					want := tc.want
					if want == 200 && method == http.MethodPost {
						want = 404 // the API answers GET only
					}
					if status != want {
						t.Errorf("%s %s: %d %s, want %d", method, tc.target, status, body, want)
					}
					if want == 400 && !strings.Contains(body, "path") {
						t.Errorf("%s %s: the 400 does not say what is wrong with the path: %s", method, tc.target, body)
					}
				}
			}
			for _, r := range up.requests() {
				t.Errorf("the upstream got %s with Authorization %q", r.path, r.header.Get("Authorization"))
			}
		})
	}
}

// TestDoubleSlashFromTrailingSlashBase: a client whose base URL ends in a
// slash asks for //v1/chat/completions; that is /v1/chat/completions, in
// record (the upstream gets the clean path) and in replay (it matches the
// recording made either way). Literal dot segments resolve the same way.
func TestDoubleSlashFromTrailingSlashBase(t *testing.T) {
	up := newHeaderUpstream(t)
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.srv.URL)
	for _, target := range []string{"//v1/chat/completions", "/openai//v1/chat/completions"} {
		if status, body := rawGet(t, rec.URL(), http.MethodPost, target); status != 200 {
			t.Fatalf("record %s: %d %s", target, status, body)
		}
	}
	settle(t, rec.URL(), 2)
	rec.stop()
	for _, r := range up.requests() {
		if r.path != "/v1/chat/completions" {
			t.Errorf("the upstream got %s, want /v1/chat/completions", r.path)
		}
	}
	rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.OnExhausted = proxy.ExhaustedRepeatLast })
	for _, target := range []string{"//v1/chat/completions", "/v1/chat/completions", "/openai//v1/chat/completions",
		"/openai/v1/chat/completions", "/v1/./chat/completions", "/v1/x/../chat/completions", "//openai///v1//chat/completions"} {
		if status, body := rawGet(t, rep.URL(), http.MethodPost, target); status != 200 {
			t.Errorf("replay %s: %d %s, want the recording", target, status, body)
		}
	}
}
