package proxy_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
)

// A provider request the fault tests send, one per API shape.
type faultAPI struct {
	name, path, body string
	// shape is a gjson path that exists only in this provider's error shape.
	shape string
}

var (
	chatAPI = faultAPI{"openai-chat", "/v1/chat/completions",
		`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"What's the weather in Paris?"}]}`, "error.param"}
	chatStreamAPI = faultAPI{"openai-chat stream", "/v1/chat/completions",
		`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"What's the weather in Paris?"}]}`, "error.param"}
	anthropicAPI = faultAPI{"anthropic", "/anthropic/v1/messages",
		`{"model":"claude-sonnet-4-5","max_tokens":256,"messages":[{"role":"user","content":"What's the weather in Paris?"}]}`, "type"}
	geminiAPI = faultAPI{"gemini", "/gemini/v1beta/models/gemini-2.0-flash:generateContent",
		`{"contents":[{"role":"user","parts":[{"text":"What's the weather in Paris?"}]}]}`, "error.status"}
)

// answer is what a client got back.
type answer struct {
	status  int
	header  http.Header
	body    []byte
	readErr error // the body did not end cleanly
}

// send posts a JSON body to the proxy and reads the whole answer.
func send(t *testing.T, base, path, body string, header ...string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	// A fresh transport per request: a broken answer must not poison the next.
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, rerr := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b, readErr: rerr}
}

// fileDigest is the SHA-256 of a file, to prove a cassette unchanged.
func fileDigest(t *testing.T, path string) string {
	t.Helper()
	return fmt.Sprintf("%x", sha256.Sum256(rawCassette(t, path)))
}

// interactionCount reads the number of interactions through an open cassette.
func interactionCount(t *testing.T, c *cassette.Cassette) int {
	t.Helper()
	n, err := c.Len()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// closedPort is a loopback address nobody listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// rawUpstream starts an upstream whose handler the test writes; the handler
// also learns when the test ends.
func rawUpstream(t *testing.T, h func(w http.ResponseWriter, r *http.Request, done <-chan struct{})) string {
	t.Helper()
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h(w, r, done)
	}))
	t.Cleanup(func() {
		close(done)
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

// faultCase is one way an upstream can fail, and what the client must see.
type faultCase struct {
	name    string
	api     faultAPI
	timeout time.Duration // Config.UpstreamTimeout; 0 is the default
	// upstream starts the failing upstream and returns its base URL.
	upstream func(t *testing.T) string
	status   int      // the status the client sees
	broken   bool     // the body must end with an error, not a clean end
	says     []string // the error message (provider shape) must contain these; %s is the upstream address
	// recorded: the answer is a complete response and is stored as it came;
	// a replay must give the same status, headers and body.
	recorded bool
	// body, when set, is what the client must receive byte for byte.
	body string
}

func faultCases() []faultCase {
	loop := fake.OpenAIChat(weatherLoop)
	refusedUp := func(t *testing.T) string { return "http://" + closedPort(t) }
	truncatedSSE := "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"lo\""
	return []faultCase{
		{name: "connection refused/openai", api: chatAPI, upstream: refusedUp, status: 502,
			says: []string{"upstream", "%s", "refused"}},
		{name: "connection refused/anthropic", api: anthropicAPI, upstream: refusedUp, status: 502,
			says: []string{"upstream anthropic", "%s", "refused"}},
		{name: "connection refused/gemini", api: geminiAPI, upstream: refusedUp, status: 502,
			says: []string{"upstream gemini", "%s", "refused"}},
		{name: "closed before headers", api: chatAPI, status: 502, says: []string{"upstream", "%s"},
			upstream: func(t *testing.T) string {
				return rawUpstream(t, func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
					conn, _, err := http.NewResponseController(w).Hijack()
					if err == nil {
						conn.Close()
					}
				})
			}},
		{name: "silent before headers", api: chatAPI, timeout: 300 * time.Millisecond, status: 504,
			says: []string{"upstream", "%s", "--upstream-timeout", "300ms"},
			upstream: func(t *testing.T) string {
				return rawUpstream(t, func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
					select {
					case <-r.Context().Done():
					case <-done:
					}
				})
			}},
		{name: "silent mid-stream", api: chatStreamAPI, timeout: 300 * time.Millisecond, status: 200, broken: true,
			upstream: func(t *testing.T) string { return fake.New(t, loop, fake.EventDelay(time.Minute)).URL() }},
		{name: "reset mid-stream", api: chatStreamAPI, status: 200, broken: true,
			upstream: func(t *testing.T) string { return fake.New(t, loop, fake.FailAfterEvents(2)).URL() }},
		{name: "reset before the first event", api: chatStreamAPI, status: 200, broken: true,
			upstream: func(t *testing.T) string { return fake.New(t, loop, fake.FailAfterEvents(0)).URL() }},
		{name: "reset mid-body", api: chatAPI, status: 200, broken: true,
			upstream: func(t *testing.T) string { return fake.New(t, loop, fake.FailAfterEvents(0)).URL() }},
		{name: "body shorter than its Content-Length", api: chatAPI, status: 200, broken: true,
			upstream: func(t *testing.T) string {
				return rawUpstream(t, func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
					w.Header().Set("Content-Type", "application/json")
					w.Header().Set("Content-Length", "500")
					w.WriteHeader(200)
					io.WriteString(w, `{"id":"chatcmpl-1","choices":[`)
				})
			}},
		// A body that is not what its Content-Encoding says fails at its
		// first read, before the status line goes out: a clear 502.
		{name: "gzip body that is not gzip", api: chatAPI, status: 502,
			says:     []string{"upstream", "does not decode as its Content-Encoding says", "gzip"},
			upstream: lyingEncoding("gzip")},
		{name: "deflate body that is not deflate", api: chatAPI, status: 502,
			says:     []string{"upstream", "does not decode as its Content-Encoding says", "zlib"},
			upstream: lyingEncoding("deflate")},
		{name: "gzip stream that breaks after its first event", api: chatStreamAPI, status: 200, broken: true,
			upstream: func(t *testing.T) string {
				return rawUpstream(t, func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
					w.Header().Set("Content-Type", "text/event-stream")
					w.Header().Set("Content-Encoding", "gzip")
					w.WriteHeader(200)
					zw := gzip.NewWriter(w)
					io.WriteString(zw, "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n")
					zw.Flush()
					w.(http.Flusher).Flush()
					io.WriteString(w, "garbage that is not deflate data")
				})
			}},
		{name: "SSE ends mid-event", api: chatStreamAPI, status: 200, body: truncatedSSE,
			upstream: func(t *testing.T) string {
				return rawUpstream(t, func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
					w.Header().Set("Content-Type", "text/event-stream")
					w.WriteHeader(200)
					io.WriteString(w, truncatedSSE)
				})
			}},
		{name: "500", api: chatAPI, status: 500, recorded: true,
			upstream: func(t *testing.T) string {
				return fake.New(t, nil, fake.Status(500, []byte(`{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`))).URL()
			}},
		{name: "503 text", api: chatAPI, status: 503, recorded: true,
			upstream: func(t *testing.T) string {
				return fake.New(t, nil, fake.Status(503, []byte("upstream connect error or disconnect/reset before headers\n"))).URL()
			}},
		{name: "429 rate limit", api: chatAPI, status: 429, recorded: true,
			upstream: func(t *testing.T) string {
				return fake.New(t, fake.ServeCaptured("openai-error-429-rate-limit.json")).URL()
			}},
		{name: "529 overloaded", api: anthropicAPI, status: 529, recorded: true,
			upstream: func(t *testing.T) string {
				return fake.New(t, fake.ServeCaptured("anthropic-error-529-overloaded.json")).URL()
			}},
		{name: "error event in a stream", api: anthropicAPI, status: 200, recorded: true,
			upstream: func(t *testing.T) string {
				return fake.New(t, fake.ServeCaptured("anthropic-messages-stream-error-overloaded.sse")).URL()
			}},
	}
}

// lyingEncoding is an upstream that labels a plain JSON body with enc.
func lyingEncoding(enc string) func(t *testing.T) string {
	return func(t *testing.T) string {
		return rawUpstream(t, func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", enc)
			w.WriteHeader(200)
			io.WriteString(w, `{"this is":"not compressed at all"}`)
		})
	}
}

// TestUpstreamFaults makes the upstream fail in every way we know, while
// recording. The client gets a clear answer (a provider-shaped 502/504 before
// the headers, a broken body after them), nothing partial reaches the
// cassette (its bytes are unchanged), the proxy keeps serving and recording,
// and complete error answers (5xx, 429, an in-band error event) are stored
// as they came so that replay gives the same status, headers and body.
func TestUpstreamFaults(t *testing.T) {
	good := fake.New(t, fake.OpenAIChat(weatherLoop))
	goodURL, _ := url.Parse(good.URL())
	var survived, faithful, partial int
	cases := faultCases()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			upURL := tc.upstream(t)
			path := cassettePath(t)
			h := startProxy(t, proxy.ModeRecord, path, upURL, func(c *proxy.Config) {
				c.UpstreamTimeout = tc.timeout
				c.Upstreams["good"] = goodURL
			})
			before := fileDigest(t, path)

			got := send(t, h.URL(), tc.api.path, tc.api.body)
			if got.status != tc.status {
				t.Errorf("status %d, want %d; body %q", got.status, tc.status, got.body)
			}
			if tc.broken && got.readErr == nil {
				t.Errorf("the body ended cleanly (%q); the client must see a broken response", got.body)
			}
			if !tc.broken && got.readErr != nil {
				t.Errorf("reading the body: %v", got.readErr)
			}
			if tc.body != "" && string(got.body) != tc.body {
				t.Errorf("body %q, want what the upstream sent: %q", got.body, tc.body)
			}
			if len(tc.says) > 0 {
				if !gjson.GetBytes(got.body, tc.api.shape).Exists() {
					t.Errorf("error body %s is not in the %s error shape (no %s)", got.body, tc.api.name, tc.api.shape)
				}
				msg := gjson.GetBytes(got.body, "error.message").String()
				for _, want := range tc.says {
					if want == "%s" {
						want = strings.TrimPrefix(upURL, "http://")
					}
					if !strings.Contains(msg, want) {
						t.Errorf("error message %q does not say %q", msg, want)
					}
				}
			}

			settle(t, h.URL(), 1)
			n := interactionCount(t, h.c)
			switch {
			case tc.recorded && n != 1:
				t.Fatalf("%d interactions recorded, want 1", n)
			case !tc.recorded && n != 0:
				partial += n
				t.Errorf("%d interactions recorded from a failed exchange, want 0", n)
			case !tc.recorded && fileDigest(t, path) != before:
				t.Errorf("the cassette file changed")
			}

			// The proxy is still up and still records.
			ok := send(t, h.URL(), "/good/v1/chat/completions", chatAPI.body)
			if ok.status != 200 || ok.readErr != nil {
				t.Fatalf("after the fault, a good request got %d %v %q", ok.status, ok.readErr, ok.body)
			}
			settle(t, h.URL(), 2)
			if m := interactionCount(t, h.c); m != n+1 {
				t.Errorf("after a good request %d interactions, want %d", m, n+1)
			}
			survived++
			if !tc.recorded {
				return
			}
			h.stop()
			rep := startProxy(t, proxy.ModeReplay, path, "")
			again := send(t, rep.URL(), tc.api.path, tc.api.body)
			if again.status != got.status || !bytes.Equal(again.body, got.body) {
				t.Errorf("replay gave %d %q, record %d %q", again.status, again.body, got.status, got.body)
			}
			for _, k := range []string{"Content-Type", "Retry-After", "X-Request-Id", "Request-Id", "Date"} {
				if again.header.Get(k) != got.header.Get(k) {
					t.Errorf("replay header %s = %q, record %q", k, again.header.Get(k), got.header.Get(k))
				}
			}
			if a, b := headerNames(again.header), headerNames(got.header); a != b {
				t.Errorf("replay headers %s, record %s", a, b)
			}
			faithful++
		})
	}
	t.Logf("upstream faults: %d cases, %d survived with a clear answer, %d recorded as they came and replayed faithfully, %d partial interactions recorded",
		len(cases), survived, faithful, partial)
}

// settle waits until the proxy's journal holds n entries: a request's
// handler adds its entry last, after anything it writes to the cassette,
// and that can be after the client has read the whole answer.
func settle(t *testing.T, base string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/_llmproxy/log")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got := int(gjson.GetBytes(b, "entries.#").Int())
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy's log holds %d entries after 10 s, want %d: %s", got, n, b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// headerNames lists a header's names, sorted, leaving out those the
// transport owns and Set-Cookie, which carries a secret and is never
// recorded.
func headerNames(h http.Header) string {
	var names []string
	for k := range h {
		if k != "Content-Length" && k != "Transfer-Encoding" && k != "Connection" && k != "Set-Cookie" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}
