package proxy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	bolt "go.etcd.io/bbolt"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
)

// badRequest is one hostile or mistaken request and the answer it must get.
type badRequest struct {
	name        string
	method      string // POST when empty
	path        string
	contentType string // application/json when empty; "-" for none
	body        string
	chunked     bool // send the body without a Content-Length
	status      int
	// says are substrings of the error message; "@offset" stands for the
	// byte offset encoding/json reports for body.
	says []string
	// shape is a gjson path that must exist in the answer: the provider's
	// error shape.
	shape string
}

const badMaxBody = 4096

func badRequests() []badRequest {
	chat, anth, gem := "/v1/chat/completions", "/anthropic/v1/messages", "/gemini/v1beta/models/gemini-2.0-flash:generateContent"
	notJSON := []string{"not valid JSON", "@offset"}
	api := []string{"GET /_llmproxy/health", "GET /_llmproxy/interactions", "GET /_llmproxy/log", "GET /_llmproxy/unused"}
	return []badRequest{
		{name: "JSON ends early", path: chat, body: `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}`,
			status: 400, says: notJSON, shape: "error.param"},
		{name: "JSON syntax error", path: chat, body: `{"model":"gpt-4o-mini","messages":[}]}`,
			status: 400, says: notJSON, shape: "error.param"},
		{name: "JSON with a trailing comma", path: chat, body: `{"model":"gpt-4o-mini","messages":[],}`,
			status: 400, says: notJSON, shape: "error.param"},
		{name: "two JSON values", path: chat, body: `{"model":"a"}{"model":"b"}`,
			status: 400, says: notJSON, shape: "error.param"},
		{name: "anthropic malformed", path: anth, body: `{"model":"claude","max_tokens":`,
			status: 400, says: notJSON, shape: "type"},
		{name: "gemini malformed", path: gem, body: `{"contents":[{"parts":[{"text":"hi"]}]}`,
			status: 400, says: notJSON, shape: "error.status"},
		{name: "text/plain prose on an LLM path", path: chat, contentType: "text/plain", body: "What's the weather in Paris?",
			status: 400, says: notJSON, shape: "error.param"},
		{name: "no Content-Type, prose on an LLM path", path: chat, contentType: "-", body: "hello",
			status: 400, says: notJSON, shape: "error.param"},
		{name: "form body on an LLM path", path: anth, contentType: "application/x-www-form-urlencoded", body: "model=claude&max_tokens=5",
			status: 400, says: notJSON, shape: "type"},
		{name: "JSON declared on a generic path", path: "/v1/files/upload", contentType: "application/json", body: `{"purpose":`,
			status: 400, says: notJSON, shape: "error.param"},
		{name: "nested 129 deep", path: chat, body: `{"model":"gpt-4o-mini","x":` + strings.Repeat("[", 128) + strings.Repeat("]", 128) + `}`,
			status: 400, says: []string{"deeper than 128 levels"}, shape: "error.param"},
		{name: "number past the exponent bound", path: chat, body: `{"model":"gpt-4o-mini","temperature":1e1000001}`,
			status: 400, says: []string{"temperature: number 1e1000001", "out of range"}, shape: "error.param"},
		{name: "body over --max-body", path: chat, body: `{"model":"gpt-4o-mini","pad":"` + strings.Repeat("x", badMaxBody) + `"}`,
			status: 413, says: []string{"--max-body", fmt.Sprint(badMaxBody)}, shape: "error.param"},
		{name: "chunked body over --max-body", path: anth, chunked: true, body: `{"pad":"` + strings.Repeat("y", 3*badMaxBody) + `"}`,
			status: 413, says: []string{"--max-body"}, shape: "type"},
		{name: "unknown API path", method: "GET", path: "/_llmproxy/nope", status: 404, says: api, shape: "error.message"},
		{name: "API root", method: "GET", path: "/_llmproxy/", status: 404, says: api, shape: "error.message"},
		{name: "API without slash", method: "GET", path: "/_llmproxy", status: 404, says: api, shape: "error.message"},
		{name: "API wrong method", path: "/_llmproxy/health", body: "{}", status: 404, says: api, shape: "error.message"},
		{name: "API dot-dot", method: "GET", path: "/_llmproxy/../v1/models", status: 404, says: api, shape: "error.message"},
		{name: "API deeper path", method: "GET", path: "/_llmproxy/log/x/y", status: 404, says: api, shape: "error.message"},
	}
}

// sendBad sends a bad request over a raw connection, so that nothing
// cleans its path or adds a Content-Length, and reads the answer.
func sendBad(t *testing.T, base string, br badRequest) (int, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	method := br.method
	if method == "" {
		method = http.MethodPost
	}
	var head strings.Builder
	fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n", method, br.path)
	switch br.contentType {
	case "":
		head.WriteString("Content-Type: application/json\r\n")
	case "-":
	default:
		fmt.Fprintf(&head, "Content-Type: %s\r\n", br.contentType)
	}
	body := br.body
	if br.chunked {
		head.WriteString("Transfer-Encoding: chunked\r\n")
		var b strings.Builder
		for rest := body; rest != ""; {
			n := min(len(rest), 1000)
			fmt.Fprintf(&b, "%x\r\n%s\r\n", n, rest[:n])
			rest = rest[n:]
		}
		b.WriteString("0\r\n\r\n")
		body = b.String()
	} else if method != http.MethodGet {
		fmt.Fprintf(&head, "Content-Length: %d\r\n", len(body))
	}
	head.WriteString("\r\n")
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	go func() { io.WriteString(conn, head.String()+body) }() // the server may answer before reading it all
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, br.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, br.path, err)
	}
	return resp.StatusCode, b
}

// errorMessage is the message of an error answer in any provider's shape.
func errorMessage(body []byte) string {
	for _, p := range []string{"error.message", "error"} {
		if r := gjson.GetBytes(body, p); r.Type == gjson.String {
			return r.Str
		}
	}
	return string(body)
}

func jsonOffset(body string) int64 {
	var v any
	var se *json.SyntaxError
	if err := json.Unmarshal([]byte(body), &v); errors.As(err, &se) {
		return se.Offset
	}
	return -1
}

// TestBadRequests sends every bad request a client can send to a proxy
// (malformed JSON, a body over --max-body, a bad cassette name, …) in each
// mode. Each gets a clear error in the provider's shape
// (naming the byte offset of a JSON error, the --max-body limit, or the API
// endpoints), reaches no upstream, leaves the cassette file byte for byte as
// it was, and the proxy serves the next request.
func TestBadRequests(t *testing.T) {
	good := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"What's the weather in Paris?"}]}`
	tried := 0
	for _, mode := range []proxy.Mode{proxy.ModeRecord, proxy.ModeReplay, proxy.ModeAuto} {
		t.Run(mode.String(), func(t *testing.T) {
			up := fake.New(t, fake.OpenAIChat(weatherLoop))
			path := cassettePath(t)
			seed := startProxy(t, proxy.ModeRecord, path, up.URL())
			if got := send(t, seed.URL(), "/v1/chat/completions", good); got.status != 200 {
				t.Fatalf("seeding the cassette: %d %s", got.status, got.body)
			}
			settle(t, seed.URL(), 1)
			seed.stop()
			h := startProxy(t, mode, path, up.URL(), func(c *proxy.Config) {
				c.MaxBody = badMaxBody
				c.OnExhausted = proxy.ExhaustedRepeatLast
			})
			for _, br := range badRequests() {
				before, hits := fileDigest(t, path), up.Hits()
				status, body := sendBad(t, h.URL(), br)
				tried++
				if status != br.status {
					t.Errorf("%s: status %d, want %d; body %s", br.name, status, br.status, body)
				}
				if !gjson.GetBytes(body, br.shape).Exists() {
					t.Errorf("%s: answer %s has no %s (provider error shape)", br.name, body, br.shape)
				}
				msg := errorMessage(body)
				for _, want := range br.says {
					if want == "@offset" {
						want = fmt.Sprintf("byte %d", jsonOffset(br.body))
					}
					if !strings.Contains(msg, want) {
						t.Errorf("%s: message %q does not say %q", br.name, msg, want)
					}
				}
				if up.Hits() != hits {
					t.Errorf("%s: the request reached the upstream", br.name)
				}
				if fileDigest(t, path) != before {
					t.Errorf("%s: the cassette file changed", br.name)
				}
				// Still serving, and the cassette still takes writes in record mode.
				n := interactionCount(t, h.c)
				if got := send(t, h.URL(), "/v1/chat/completions", good); got.status != 200 || got.readErr != nil {
					t.Fatalf("%s: the next good request got %d %v %s", br.name, got.status, got.readErr, got.body)
				}
				want := n
				if mode == proxy.ModeRecord {
					want++
					for deadline := time.Now().Add(10 * time.Second); interactionCount(t, h.c) < want && time.Now().Before(deadline); {
						time.Sleep(5 * time.Millisecond)
					}
				}
				if got := interactionCount(t, h.c); got != want {
					t.Errorf("%s: %d interactions after the next good request, want %d", br.name, got, want)
				}
			}
		})
	}
	t.Logf("bad requests: %d tried across record, replay and auto; every one answered with a clear error, the cassette unchanged, the proxy serving", tried)
}

// TestStackExhaustingBody sends 30 MiB of '[' (under the default
// --max-body of 32 MiB). Before match.MaxDepth, gjson's recursive validator
// overflowed the goroutine stack on it, which ends the whole process.
func TestStackExhaustingBody(t *testing.T) {
	up := fake.New(t, fake.OpenAIChat(weatherLoop))
	path := cassettePath(t)
	h := startProxy(t, proxy.ModeRecord, path, up.URL())
	before := fileDigest(t, path)
	body := strings.Repeat("[", 30<<20)
	for _, p := range []string{"/v1/chat/completions", "/v1/files"} {
		got := send(t, h.URL(), p, body)
		switch {
		case p == "/v1/chat/completions" && got.status != 400:
			t.Errorf("%s: status %d, want 400", p, got.status)
		case got.status == 400 && !strings.Contains(errorMessage(got.body), "deeper than 128 levels"):
			t.Errorf("%s: message %q does not give the depth limit", p, errorMessage(got.body))
		}
	}
	if fileDigest(t, path) != before {
		t.Error("the cassette file changed")
	}
	if got := send(t, h.URL(), "/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`); got.status != 200 {
		t.Errorf("after the deep bodies a good request got %d %s", got.status, got.body)
	}
}

// TestHostileCassetteNames sends names that escape --cassette-dir, and
// names of cassettes in it that are not cassettes, damaged, or from a newer
// llmproxy. Each gets a clear error naming what is wrong, and no file in or
// around the directory is created or changed.
func TestHostileCassetteNames(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "cassettes")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "outside.cassette"), []byte("outside"), 0o644)
	os.WriteFile(filepath.Join(dir, "text.cassette"), []byte(strings.Repeat("not a bbolt file\n", 500)), 0o644)
	newerCassette(t, filepath.Join(dir, "newer.cassette"))
	damagedCassette(t, filepath.Join(dir, "damaged.cassette"))
	before := treeDigest(t, root)

	up := fake.New(t, fake.OpenAIChat(weatherLoop))
	cases := []struct {
		name   string
		status int
		says   string
	}{
		{"../outside", 400, "cassette"},
		{"..", 400, "cassette"},
		{"/etc/passwd", 400, "cassette"},
		{"a/b", 400, "cassette"},
		{`a\b`, 400, "cassette"},
		{"x\x00y", 400, "Bad Request"}, // refused by net/http itself
		{"%2e%2e/outside", 400, "cassette"},
		{"text", 500, filepath.Join(dir, "text.cassette")},
		{"newer", 500, "format version 99"},
		{"damaged", 500, filepath.Join(dir, "damaged.cassette")},
	}
	upURL, err := url.Parse(up.URL())
	if err != nil {
		t.Fatal(err)
	}
	tried := 0
	for _, mode := range []proxy.Mode{proxy.ModeRecord, proxy.ModeReplay, proxy.ModeAuto} {
		cfg := proxy.Config{Mode: mode, CassetteDir: dir, Default: upURL, Upstreams: map[string]*url.URL{"openai": upURL}}
		p, err := proxy.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(p)
		for _, tc := range cases {
			status, body := rawCassetteRequest(t, srv.URL, tc.name)
			tried++
			if status != tc.status {
				t.Errorf("%s: cassette %q: status %d, want %d: %s", mode, tc.name, status, tc.status, body)
			}
			if msg := errorMessage(body); !strings.Contains(msg, tc.says) {
				t.Errorf("%s: cassette %q: message %q does not say %q", mode, tc.name, msg, tc.says)
			}
		}
		srv.Close()
		p.Close()
	}
	if up.Hits() != 0 {
		t.Errorf("the upstream got %d requests", up.Hits())
	}
	if after := treeDigest(t, root); after != before {
		t.Errorf("files changed:\nbefore %s\nafter  %s", before, after)
	}
	t.Logf("hostile or unusable cassette names: %d tried across record, replay and auto; no file touched", tried)
}

func rawCassetteRequest(t *testing.T, base, name string) (int, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n%s: %s\r\nContent-Length: %d\r\n\r\n%s",
		proxy.CassetteHeader, name, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("cassette %q: %v", name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// treeDigest lists every file under root with its size and digest.
func treeDigest(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fmt.Fprintf(&b, "%s=%s ", strings.TrimPrefix(p, root), fileDigest(t, p)[:12])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// newerCassette writes a cassette whose metadata claims format version 99.
func newerCassette(t *testing.T, path string) {
	t.Helper()
	c, err := cassette.Open(path, cassette.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	db, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("meta"), []byte(`{"format_version":99}`))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// damagedCassette writes a cassette with one interaction, then zeroes the
// pages that hold it: bbolt panics when it reads them.
func damagedCassette(t *testing.T, path string) {
	t.Helper()
	c, err := cassette.Open(path, cassette.Options{})
	if err != nil {
		t.Fatal(err)
	}
	i := &cassette.Interaction{Upstream: "openai", Kind: "openai-chat",
		Request:  cassette.Request{Method: "POST", Path: "/v1/chat/completions", Body: cassette.Body(`{"marker":"DAMAGE-ME"}`)},
		Response: cassette.Response{Status: 200, Body: cassette.Body(`{}`)}}
	if res, err := c.AppendAll([]cassette.Keyed{{Interaction: i, Key: "k", Shape: "s"}}); err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	c.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Every copy: bbolt's copy-on-write leaves stale ones in free pages.
	page := os.Getpagesize()
	for at := bytes.Index(data, []byte("DAMAGE-ME")); at >= 0; at = bytes.Index(data, []byte("DAMAGE-ME")) {
		clear(data[at/page*page : at/page*page+page])
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
