package proxy_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
)

// startDirProxy serves the cassettes of dir, chosen per request by the
// X-Llmproxy-Cassette header, with every upstream pointing at upstreamURL.
// It returns the proxy's URL and a function that stops it (the test's end
// does too).
func startDirProxy(t *testing.T, mode proxy.Mode, dir, upstreamURL string) (string, func()) {
	t.Helper()
	cfg := proxy.Config{Mode: mode, CassetteDir: dir, Version: "test"}
	if upstreamURL != "" {
		u, err := url.Parse(upstreamURL)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Upstreams = map[string]*url.URL{"openai": u}
		cfg.Default = u
	}
	if mode == proxy.ModeReplay {
		cfg.Transport = forbidden{t}
	}
	p, err := proxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			srv.Close()
			if err := p.Close(); err != nil {
				t.Errorf("closing the proxy: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return srv.URL, stop
}

// namedCassette adds the X-Llmproxy-Cassette header to every request.
type namedCassette string

func (n namedCassette) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(proxy.CassetteHeader, string(n))
	return http.DefaultTransport.RoundTrip(r)
}

func TestCassetteDirParallel(t *testing.T) {
	const cassettes, loops = 10, 2
	dir := t.TempDir()
	up := fake.New(t, fake.OpenAIChat(weatherLoop))
	cities := []string{"Paris", "Rome", "Oslo", "Lima", "Kyiv", "Doha", "Riga", "Bern", "Cork", "Nice"}
	prompt := func(n int) string { return "What's the weather in " + cities[n] + "?" }

	// Each cassette is recorded by two tool loops at once: were it opened
	// twice, the second open would wait for the first's exclusive lock.
	for _, mode := range []proxy.Mode{proxy.ModeRecord, proxy.ModeReplay} {
		base, stop := startDirProxy(t, mode, dir, up.URL())
		t.Run(mode.String(), func(t *testing.T) {
			for n := range cassettes {
				t.Run(fmt.Sprintf("test%d", n), func(t *testing.T) {
					t.Parallel()
					name := fmt.Sprintf("test%d", n)
					hc := &http.Client{Transport: namedCassette(name)}
					var wg sync.WaitGroup
					errs := make([]error, loops)
					got := make([]transcript, loops)
					for l := range loops {
						wg.Go(func() { got[l], errs[l] = openaiGoLoop(context.Background(), hc, base, prompt(n), false) })
					}
					wg.Wait()
					for l := range loops {
						if errs[l] != nil {
							t.Fatalf("loop %d: %v", l, errs[l])
						}
						if len(got[l].calls) != 1 || got[l].answer != weatherLoop.Answer {
							t.Errorf("loop %d: %v is not the weather tool loop", l, got[l])
						}
					}
					if ids := unusedIDs(t, base, "?cassette="+name); mode == proxy.ModeReplay && len(ids) != 0 {
						t.Errorf("unused after replay = %v, want none", ids)
					}
				})
			}
		})
		stop()
	}
	if want := cassettes * loops * 2; up.Hits() != want {
		t.Errorf("upstream hits = %d, want %d (all while recording)", up.Hits(), want)
	}
	// Every cassette holds its own test's requests and no other's.
	for n := range cassettes {
		c, err := cassette.Open(filepath.Join(dir, fmt.Sprintf("test%d.cassette", n)), cassette.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		all, err := c.All()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != loops*2 {
			t.Errorf("test%d.cassette holds %d interactions, want %d", n, len(all), loops*2)
		}
		for _, i := range all {
			if !strings.Contains(string(i.Request.Body), cities[n]) {
				t.Errorf("test%d.cassette interaction %d is not about %s: %s", n, i.ID, cities[n], i.Request.Body)
			}
		}
	}
}

// listFiles lists every file and directory under root.
func listFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		out = append(out, path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rawRequest sends a request with a header value as given (Go's client
// refuses some), and returns the status code.
func rawRequest(t *testing.T, base, target, header string) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	h := ""
	if header != "" {
		h = proxy.CassetteHeader + ": " + header + "\r\n"
	}
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s", target, h, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestCassetteNamesThatEscape(t *testing.T) {
	for _, name := range []string{"", "/abs", "../x", "a/b", `a\b`, "x\x00y", "..", "../../etc/passwd", "a/../b", `..\x`, "x.."} {
		if err := proxy.CheckCassetteName(name); err == nil {
			t.Errorf("CheckCassetteName(%q) = nil, want an error", name)
		}
	}
	for _, name := range []string{"x", "test-1", "Test_Foo.bar", "a b", "ü"} {
		if err := proxy.CheckCassetteName(name); err != nil {
			t.Errorf("CheckCassetteName(%q) = %v, want nil", name, err)
		}
	}

	root := t.TempDir()
	dir := filepath.Join(root, "cassettes")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	up := fake.New(t, fake.OpenAIChat(weatherLoop))
	before := listFiles(t, root)
	for _, mode := range []proxy.Mode{proxy.ModeRecord, proxy.ModeAuto, proxy.ModeReplay} {
		base, _ := startDirProxy(t, mode, dir, up.URL())
		for _, name := range []string{"", "/abs", "../x", "a/b", `a\b`, "x\x00y", ".."} {
			t.Run(fmt.Sprintf("%s/%q", mode, name), func(t *testing.T) {
				if got := rawRequest(t, base, "/v1/chat/completions", name); got != http.StatusBadRequest {
					t.Errorf("proxied request: status %d, want 400", got)
				}
				q := url.Values{"cassette": {name}}.Encode()
				resp, err := http.Get(base + "/_llmproxy/unused?" + q)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusBadRequest {
					t.Errorf("GET /_llmproxy/unused?%s: status %d, want 400", q, resp.StatusCode)
				}
			})
		}
	}
	if up.Hits() != 0 {
		t.Errorf("upstream hits = %d, want 0", up.Hits())
	}
	if after := listFiles(t, root); !slices.Equal(after, before) {
		t.Errorf("files changed:\nbefore %q\nafter  %q", before, after)
	}
}

func TestCassetteDirMissingCassette(t *testing.T) {
	dir := t.TempDir()
	base, _ := startDirProxy(t, proxy.ModeReplay, dir, "")
	// A proxied request on a cassette that does not exist is a miss.
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set(proxy.CassetteHeader, "nope")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get(proxy.MissHeader) != "1" ||
		!strings.Contains(string(b), "cassette_miss") || !strings.Contains(string(b), "nope.cassette") {
		t.Errorf("status %d, miss header %q, body %s; want a 400 cassette_miss naming nope.cassette",
			resp.StatusCode, resp.Header.Get(proxy.MissHeader), b)
	}
	// The API says 404 and creates nothing, in every mode.
	for _, mode := range []proxy.Mode{proxy.ModeReplay, proxy.ModeRecord, proxy.ModeAuto} {
		base, _ := startDirProxy(t, mode, dir, "http://127.0.0.1:1")
		for _, path := range []string{"/_llmproxy/unused?cassette=nope", "/_llmproxy/interactions?cassette=nope"} {
			resp, err := http.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s: GET %s: status %d, want 404", mode, path, resp.StatusCode)
			}
		}
	}
	if files := listFiles(t, dir); len(files) != 1 {
		t.Errorf("files appeared: %q", files[1:])
	}
}

// TestCassetteNameMessages: a missing header and a name spelled with its
// file suffix get messages that say what to send, and still match
// ErrBadCassetteName for callers that branch on it.
func TestCassetteNameMessages(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"", "send the header X-Llmproxy-Cassette: NAME to pick the cassette DIR/NAME.cassette"},
		{"chat.cassette", `cassette name "chat.cassette" ends in .cassette: give the name without it (X-Llmproxy-Cassette: chat picks DIR/chat.cassette)`},
	} {
		err := proxy.CheckCassetteName(tc.name)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.HasSuffix(err.Error(), "bad cassette name") {
			t.Errorf("CheckCassetteName(%q) = %v; want a message containing %q, not ending in the sentinel's text", tc.name, err, tc.want)
		}
		if !errors.Is(err, proxy.ErrBadCassetteName) {
			t.Errorf("CheckCassetteName(%q) = %v; want it to match ErrBadCassetteName", tc.name, err)
		}
	}
}

// TestCassetteNameLength: a header-chosen cassette name longer than
// proxy.MaxCassetteName bytes is a 400 naming the limit, in every mode and
// on the API, never a 500 from the file system; one at the limit is taken.
func TestCassetteNameLength(t *testing.T) {
	up := fake.New(t, fake.OpenAIChat(weatherLoop))
	for _, mode := range []proxy.Mode{proxy.ModeRecord, proxy.ModeReplay} {
		dir := t.TempDir()
		base, _ := startDirProxy(t, mode, dir, up.URL())
		for _, tc := range []struct {
			name string
			want int
		}{
			{strings.Repeat("a", 300), http.StatusBadRequest},
			{strings.Repeat("é", proxy.MaxCassetteName/2+1), http.StatusBadRequest},
			{strings.Repeat("b", proxy.MaxCassetteName), http.StatusOK},
		} {
			if mode == proxy.ModeReplay && tc.want == http.StatusOK {
				tc.want = http.StatusBadRequest // a miss: the cassette does not exist
			}
			for _, path := range []string{"/v1/chat/completions", "/_llmproxy/interactions"} {
				method, body := http.MethodPost, strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"What's the weather in Paris?"}]}`)
				if strings.HasPrefix(path, "/_llmproxy/") {
					method, body = http.MethodGet, strings.NewReader("")
				}
				req, _ := http.NewRequest(method, base+path, body)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(proxy.CassetteHeader, tc.name)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				msg, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if len(tc.name) > proxy.MaxCassetteName {
					if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(msg), fmt.Sprintf("longer than %d bytes", proxy.MaxCassetteName)) {
						t.Errorf("%s %s with a name of %d bytes: %d %s; want 400 naming the limit", mode, path, len(tc.name), resp.StatusCode, msg)
					}
				} else if path == "/v1/chat/completions" && resp.StatusCode != tc.want {
					t.Errorf("%s %s with a name of %d bytes: %d %s; want %d", mode, path, len(tc.name), resp.StatusCode, msg, tc.want)
				}
			}
		}
	}
}
