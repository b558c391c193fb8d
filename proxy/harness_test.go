package proxy_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/proxy"
)

// harness is a proxy on an httptest server over a real cassette file.
type harness struct {
	t     testing.TB
	path  string
	c     *cassette.Cassette
	p     *proxy.Server
	srv   *httptest.Server
	taped *tapeTransport
}

// startProxy starts a proxy in mode on the cassette at path; every named
// upstream and the default point at upstreamURL.
func startProxy(t testing.TB, mode proxy.Mode, path, upstreamURL string, edit ...func(*proxy.Config)) *harness {
	t.Helper()
	c, err := cassette.Open(path, cassette.Options{ReadOnly: mode == proxy.ModeReplay, Version: "test"})
	if err != nil {
		t.Fatalf("open cassette: %v", err)
	}
	cfg := proxy.Config{Mode: mode, Cassette: c}
	if upstreamURL != "" {
		u, err := url.Parse(upstreamURL)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Upstreams = map[string]*url.URL{"openai": u, "anthropic": u, "gemini": u, "ollama": u, "azure": u}
		cfg.Default = u
	}
	if mode == proxy.ModeReplay {
		cfg.Transport = forbidden{t}
	}
	for _, e := range edit {
		e(&cfg)
	}
	p, err := proxy.New(cfg)
	if err != nil {
		c.Close()
		t.Fatalf("proxy.New: %v", err)
	}
	h := &harness{t: t, path: path, c: c, p: p, srv: httptest.NewServer(p), taped: &tapeTransport{}}
	t.Cleanup(h.stop)
	return h
}

func (h *harness) stop() {
	if h.srv != nil {
		h.srv.Close()
		h.srv = nil
		h.p.Close()
		h.c.Close()
	}
}

// URL is the proxy's base URL.
func (h *harness) URL() string { return h.srv.URL }

// client is an http.Client whose response bodies are kept for byte comparisons.
func (h *harness) client() *http.Client { return &http.Client{Transport: h.taped} }

// bodies returns the raw response bodies the clients received, in order.
func (h *harness) bodies() [][]byte { return h.taped.bodies() }

// forbidden fails the test if replay ever dials an upstream.
type forbidden struct{ t testing.TB }

func (f forbidden) RoundTrip(r *http.Request) (*http.Response, error) {
	f.t.Errorf("replay contacted an upstream: %s %s", r.Method, r.URL)
	return nil, io.ErrUnexpectedEOF
}

// tapeTransport keeps every response body it delivers.
type tapeTransport struct {
	mu  sync.Mutex
	got []*bytes.Buffer
}

func (tt *tapeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	buf := &bytes.Buffer{}
	tt.mu.Lock()
	tt.got = append(tt.got, buf)
	tt.mu.Unlock()
	resp.Body = &teeBody{ReadCloser: resp.Body, buf: buf, mu: &tt.mu}
	return resp, nil
}

func (tt *tapeTransport) bodies() [][]byte {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	out := make([][]byte, len(tt.got))
	for i, b := range tt.got {
		out[i] = bytes.Clone(b.Bytes())
	}
	return out
}

type teeBody struct {
	io.ReadCloser
	buf *bytes.Buffer
	mu  *sync.Mutex
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.mu.Lock()
	b.buf.Write(p[:n])
	b.mu.Unlock()
	return n, err
}

// cassettePath is a fresh cassette file name in a temporary directory.
func cassettePath(t testing.TB) string {
	return filepath.Join(t.TempDir(), "test.cassette")
}

// rawCassette reads the cassette file's bytes.
func rawCassette(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recordedIn is every interaction of the cassette at path, opened
// read-only and closed again.
func recordedIn(t *testing.T, path string) []*cassette.Interaction {
	t.Helper()
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	all, err := c.All()
	if err != nil {
		t.Fatal(err)
	}
	return all
}
