package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/proxy"
)

// canary is the distinctive part of every secret the security tests send;
// each place gets its own suffix, so a leak says where it came from.
const canary = "LLMPROXY-CANARY-7f3a9"

// keyPlaces are the places a key travels in the supported providers' APIs
// (the secret headers and the query parameter key, which are never
// written), and a few spellings of them.
var keyPlaces = []struct {
	header, value string // a request header, or "" for the query
	query         string // raw query fragment
}{
	{header: "Authorization", value: "Bearer sk-" + canary + "-authorization"},
	{header: "Proxy-Authorization", value: "Basic " + canary + "-proxy-authorization"},
	{header: "X-Api-Key", value: "sk-ant-" + canary + "-x-api-key"},
	{header: "Api-Key", value: canary + "-api-key"},
	{header: "X-Goog-Api-Key", value: "AIza" + canary + "-x-goog-api-key"},
	{header: "Cookie", value: "session=" + canary + "-cookie; theme=dark"},
	{header: "x-api-key", value: "sk-ant-" + canary + "-lowercase-header"},
	{query: "key=AIza" + canary + "-query"},
	{query: "ke%79=AIza" + canary + "-escaped-query-name"},
	{query: "key=" + canary + "-repeated-query-1&key=" + canary + "-repeated-query-2"},
}

// secretRequest is one provider request the secrets test sends.
type secretRequest struct {
	provider string
	script   fake.Script
	path     string // through the proxy, with the routing prefix
	query    string // the provider's own query, without keys
	body     string
}

func secretRequests() []secretRequest {
	q := "What's the weather in Paris?"
	var out []secretRequest
	for _, stream := range []bool{false, true} {
		s := fmt.Sprint(stream)
		gemPath, gemQuery := "/gemini/v1beta/models/gemini-2.0-flash:generateContent", ""
		if stream {
			gemPath, gemQuery = "/gemini/v1beta/models/gemini-2.0-flash:streamGenerateContent", "alt=sse"
		}
		out = append(out,
			secretRequest{"openai-chat stream=" + s, fake.OpenAIChat(weatherLoop), "/openai/v1/chat/completions", "",
				`{"model":"gpt-4o-mini","stream":` + s + `,"messages":[{"role":"user","content":"` + q + `"}]}`},
			secretRequest{"openai-responses stream=" + s, fake.OpenAIResponses(weatherLoop), "/openai/v1/responses", "",
				`{"model":"gpt-4o-mini","stream":` + s + `,"input":"` + q + `"}`},
			secretRequest{"azure stream=" + s, fake.OpenAIChat(weatherLoop), "/azure/openai/deployments/gpt-4o-mini/chat/completions", "api-version=2024-10-21",
				`{"stream":` + s + `,"messages":[{"role":"user","content":"` + q + `"}]}`},
			secretRequest{"anthropic stream=" + s, fake.AnthropicMessages(weatherLoop), "/anthropic/v1/messages", "",
				`{"model":"claude-sonnet-4-5","max_tokens":256,"stream":` + s + `,"messages":[{"role":"user","content":"` + q + `"}]}`},
			secretRequest{"gemini stream=" + s, fake.Gemini(weatherLoop), gemPath, gemQuery,
				`{"contents":[{"role":"user","parts":[{"text":"` + q + `"}]}]}`},
			secretRequest{"ollama stream=" + s, fake.Ollama(weatherLoop), "/ollama/api/chat", "",
				`{"model":"llama3.2","stream":` + s + `,"messages":[{"role":"user","content":"` + q + `"}]}`},
		)
	}
	return out
}

// keyedRequest builds a request carrying a key in every place, each key
// ending in suffix.
func keyedRequest(t *testing.T, base string, sr secretRequest, suffix string) *http.Request {
	t.Helper()
	query := sr.query
	for _, p := range keyPlaces {
		if p.query != "" {
			if query != "" {
				query += "&"
			}
			query += p.query + suffix
		}
	}
	target := base + sr.path
	if query != "" {
		target += "?" + query
	}
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(sr.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for _, p := range keyPlaces {
		if p.header != "" {
			req.Header[p.header] = append(req.Header[p.header], p.value+suffix)
		}
	}
	return req
}

// lockedBuffer is a log sink shared by the proxy's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// getBody fetches a proxy API page.
func getBody(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}

// TestSecretsNeverWritten records, for every provider and streamed or not, a
// request that carries a distinctive key in every place a key can travel.
// The upstream must get the keys (it checks one of them), and none may
// appear in the cassette file's raw bytes, its export, the proxy's API
// answers, or its log. Replaying with other keys still matches.
func TestSecretsNeverWritten(t *testing.T) {
	requests := secretRequests()
	for _, sr := range requests {
		t.Run(sr.provider, func(t *testing.T) {
			up := fake.New(t, sr.script, fake.RequireHeader("Cookie", "session="+canary+"-cookie; theme=dark-record"))
			path := cassettePath(t)
			var logs lockedBuffer
			h := startProxy(t, proxy.ModeRecord, path, up.URL(), func(c *proxy.Config) {
				c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			})
			resp, err := http.DefaultClient.Do(keyedRequest(t, h.URL(), sr, "-record"))
			if err != nil {
				t.Fatal(err)
			}
			recorded, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, recorded)
			}
			settle(t, h.URL(), 1)
			got := up.Requests()
			if len(got) != 1 || !strings.Contains(got[0].Header.Get("Authorization"), canary) || !strings.Contains(got[0].RawQuery, canary) {
				t.Fatalf("the keys did not reach the upstream: %+v", got)
			}
			api := [][]byte{getBody(t, h.URL()+"/_llmproxy/log"), getBody(t, h.URL()+"/_llmproxy/interactions"), getBody(t, h.URL()+"/_llmproxy/unused")}
			h.stop()

			var export bytes.Buffer
			c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Export(&export); err != nil {
				t.Fatal(err)
			}
			n, _ := c.Len()
			c.Close()
			if n != 1 {
				t.Fatalf("%d interactions recorded, want 1", n)
			}
			for name, b := range map[string][]byte{
				"cassette file": rawCassette(t, path), "export": export.Bytes(), "log": []byte(logs.String()),
				"GET /_llmproxy/log": api[0], "GET /_llmproxy/interactions": api[1], "GET /_llmproxy/unused": api[2],
			} {
				if i := bytes.Index(b, []byte(canary)); i >= 0 {
					end := min(len(b), i+len(canary)+30)
					t.Errorf("%s holds a key: …%s…", name, b[max(0, i-40):end])
				}
			}
			if !bytes.Contains(export.Bytes(), []byte(cassette.Redacted)) {
				t.Errorf("the export shows no %s marker where the keys were", cassette.Redacted)
			}

			// Replay with other keys in every place: still a match.
			rep := startProxy(t, proxy.ModeReplay, path, "")
			resp, err = http.DefaultClient.Do(keyedRequest(t, rep.URL(), sr, "-replay"))
			if err != nil {
				t.Fatal(err)
			}
			replayed, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get(proxy.MissHeader) != "" || !bytes.Equal(replayed, recorded) {
				t.Errorf("replay with other keys: %d %s, want the recorded answer", resp.StatusCode, replayed)
			}
		})
	}
	t.Logf("secrets: %d provider requests, each with keys in %d places and spellings; keys found in cassette files, exports, API answers and logs: 0", len(requests), len(keyPlaces))
}

// TestSetCookieNeverWritten records a response that sets a cookie: the
// client gets it, the cassette does not.
func TestSetCookieNeverWritten(t *testing.T) {
	h := http.Header{"Content-Type": {"application/json"}, "Set-Cookie": {"__cf_bm=" + canary + "-set-cookie; path=/; HttpOnly"}}
	up := fake.New(t, fake.Verbatim(200, h, []byte(`{"object":"list","data":[]}`)))
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.URL())
	resp, err := http.Get(rec.URL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if !strings.Contains(resp.Header.Get("Set-Cookie"), canary) {
		t.Errorf("the client did not get the upstream's cookie: %v", resp.Header)
	}
	settle(t, rec.URL(), 1)
	rec.stop()
	if bytes.Contains(rawCassette(t, path), []byte(canary)) {
		t.Error("the cassette file holds the Set-Cookie value")
	}
}

// TestExtraRedactionRules adds a header (--redact-header) and a body path
// (--redact-json): their values never reach the file, and a replayed
// request with other values there still matches, while a change anywhere
// else is a miss.
func TestExtraRedactionRules(t *testing.T) {
	red, err := cassette.NewRedactor([]string{"X-Tenant-Token"}, []string{"metadata.user_key", "messages.#.name"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := cassette.NewIndexer(match.Rules{}, red)
	if err != nil {
		t.Fatal(err)
	}
	withRules := func(c *proxy.Config) { c.Redactor, c.Indexer = red, m }
	body := func(userKey, name, content string) string {
		return `{"model":"gpt-4o-mini","metadata":{"user_key":"` + userKey + `","team":"qa"},` +
			`"messages":[{"role":"user","name":"` + name + `","content":"` + content + `"}]}`
	}
	up := fake.New(t, fake.OpenAIChat(weatherLoop))
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.URL(), withRules)
	first := send(t, rec.URL(), "/v1/chat/completions", body(canary+"-body", canary+"-name", "Paris?"), "X-Tenant-Token", canary+"-tenant")
	if first.status != 200 {
		t.Fatalf("record: %d %s", first.status, first.body)
	}
	settle(t, rec.URL(), 1)
	rec.stop()
	if up.Requests()[0].Header.Get("X-Tenant-Token") != canary+"-tenant" || !strings.Contains(string(up.Requests()[0].Body), canary+"-body") {
		t.Error("the upstream did not get the values that are redacted from the file")
	}
	raw := rawCassette(t, path)
	if i := bytes.Index(raw, []byte(canary)); i >= 0 {
		t.Errorf("the cassette file holds a redacted value: …%s…", raw[max(0, i-40):min(len(raw), i+60)])
	}

	rep := startProxy(t, proxy.ModeReplay, path, "", withRules, func(c *proxy.Config) { c.OnExhausted = proxy.ExhaustedRepeatLast })
	for _, tc := range []struct {
		name, body, token string
		match             bool
	}{
		{"other values at the redacted paths", body("another-user-key", "another-name", "Paris?"), "other-token", true},
		{"the redacted paths absent", `{"model":"gpt-4o-mini","metadata":{"team":"qa"},"messages":[{"role":"user","content":"Paris?"}]}`, "", true},
		{"a change elsewhere in metadata", strings.Replace(body("k", "n", "Paris?"), `"qa"`, `"dev"`, 1), "", false},
		{"a change in the content", body("k", "n", "Rome?"), "", false},
	} {
		got := send(t, rep.URL(), "/v1/chat/completions", tc.body, "X-Tenant-Token", tc.token)
		matched := got.status == 200 && got.header.Get(proxy.MissHeader) == ""
		if matched != tc.match {
			t.Errorf("%s: matched = %v, want %v (%d %s)", tc.name, matched, tc.match, got.status, got.body)
		}
		if matched && !bytes.Equal(got.body, first.body) {
			t.Errorf("%s: replayed body differs from the recorded one", tc.name)
		}
	}
}

// dialLog is an upstream transport that records every address it dials
// and every host it sends a request to.
type dialLog struct {
	mu    sync.Mutex
	dials []string
	hosts []string
	rt    *http.Transport
}

func newDialLog() *dialLog {
	d := &dialLog{}
	var dialer net.Dialer
	d.rt = &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		d.mu.Lock()
		d.dials = append(d.dials, addr)
		d.mu.Unlock()
		return dialer.DialContext(ctx, network, addr)
	}}
	return d
}

func (d *dialLog) RoundTrip(r *http.Request) (*http.Response, error) {
	d.mu.Lock()
	d.hosts = append(d.hosts, r.URL.Host+" Host:"+r.Host)
	d.mu.Unlock()
	return d.rt.RoundTrip(r)
}

func (d *dialLog) seen() (dials, hosts []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dials...), append([]string(nil), d.hosts...)
}

// TestClientCannotChooseTheUpstream sends requests whose Host, forwarding
// headers, request line or path name another host, over a raw connection.
// Every one that is forwarded goes to the configured upstream, and no other
// address is ever dialled.
func TestClientCannotChooseTheUpstream(t *testing.T) {
	up := fake.New(t, fake.OpenAIChat(weatherLoop))
	upHost := strings.TrimPrefix(up.URL(), "http://")
	dials := newDialLog()
	path := cassettePath(t)
	h := startProxy(t, proxy.ModeRecord, path, up.URL(), func(c *proxy.Config) { c.Transport = dials })
	proxyHost := strings.TrimPrefix(h.URL(), "http://")
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"What's the weather in Paris?"}]}`
	evil := "Host: evil.example\r\nX-Forwarded-Host: evil.example\r\nX-Forwarded-Proto: https\r\nX-Forwarded-For: 203.0.113.9\r\nX-Forwarded-Port: 443\r\nForwarded: host=evil.example;proto=https\r\nX-Real-Ip: 203.0.113.9\r\n"
	cases := []struct {
		name, line, headers string
	}{
		{"Host and forwarding headers", "POST /v1/chat/completions HTTP/1.1", evil},
		{"absolute URI", "POST http://evil.example/v1/chat/completions HTTP/1.1", evil},
		{"absolute https URI with port", "POST https://evil.example:8443/openai/v1/chat/completions HTTP/1.1", "Host: evil.example:8443\r\n"},
		{"absolute URI naming the proxy", "POST http://" + proxyHost + "/v1/chat/completions HTTP/1.1", "Host: " + proxyHost + "\r\n"},
		{"userinfo in the path", "POST /openai@evil.example/v1/chat/completions HTTP/1.1", evil},
		{"scheme-relative path", "POST //evil.example/v1/chat/completions HTTP/1.1", evil},
		{"upstream name then a host", "POST /openai/http://evil.example/v1/chat/completions HTTP/1.1", evil},
		{"CONNECT", "CONNECT evil.example:443 HTTP/1.1", "Host: evil.example:443\r\n"},
	}
	for _, tc := range cases {
		conn, err := net.Dial("tcp", proxyHost)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "%s\r\n%sConnection: close\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", tc.line, tc.headers, len(body), body)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			conn.Close()
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		conn.Close()
		t.Logf("%s: %d", tc.name, resp.StatusCode)
	}
	for _, r := range up.Requests() {
		for k := range r.Header {
			if strings.HasPrefix(k, "X-Forwarded-") || k == "Forwarded" || k == "X-Real-Ip" {
				t.Errorf("the upstream got %s: %s", k, r.Header.Get(k))
			}
		}
	}
	d, hosts := dials.seen()
	if up.Hits() == 0 {
		t.Error("no request reached the upstream")
	}
	for _, a := range d {
		if a != upHost {
			t.Errorf("dialled %s; only the upstream %s may be", a, upHost)
		}
	}
	for _, hh := range hosts {
		if hh != upHost+" Host:" && hh != upHost+" Host:"+upHost {
			t.Errorf("sent a request to %s; only the upstream %s may get one", hh, upHost)
		}
	}
	t.Logf("host steering: %d requests naming another host, %d reached the upstream, addresses dialled: %v", len(cases), up.Hits(), d)
}

// TestAdminToken: with a token set, /_llmproxy/ answers 401 without it or
// with a wrong one (429 once the client sent too many), and the token is
// never echoed; the proxied API does not need it.
func TestAdminToken(t *testing.T) {
	const token = "adm-" + canary
	up := fake.New(t, fake.OpenAIChat(weatherLoop))
	h := startProxy(t, proxy.ModeRecord, cassettePath(t), up.URL(), func(c *proxy.Config) { c.AdminToken = token })
	for _, p := range []string{"/_llmproxy/health", "/_llmproxy/log", "/_llmproxy/interactions", "/_llmproxy/unused", "/_llmproxy/fixtures/call_x", "/_llmproxy/nope", "/_llmproxy"} {
		for _, auth := range []string{"", "Bearer wrong", "Bearer " + token + "x", "Bearer", "Basic " + token, token} {
			req, _ := http.NewRequest(http.MethodGet, h.URL()+p, nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			// Past a few wrong tokens the client waits (429, see TestWrongAdminTokensWait).
			if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusTooManyRequests {
				t.Errorf("GET %s with Authorization %q: %d, want 401 (or 429)", p, auth, resp.StatusCode)
			}
			if bytes.Contains(b, []byte(canary)) {
				t.Errorf("GET %s: the answer echoes the token: %s", p, b)
			}
		}
		req, _ := http.NewRequest(http.MethodGet, h.URL()+p, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized {
			t.Errorf("GET %s with the token: 401", p)
		}
	}
	u, _ := url.Parse(h.URL() + "/v1/chat/completions")
	if got := send(t, u.Scheme+"://"+u.Host, u.Path, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`); got.status != 200 {
		t.Errorf("a proxied request without the admin token: %d %s", got.status, got.body)
	}
}
