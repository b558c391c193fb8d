package view_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/uitest"
	"github.com/llmproxy/llmproxy/view"
)

// fakeSource is the sample cassette with a log and scenarios the test
// writes.
type fakeSource struct {
	view.CassetteSource
	mu      sync.Mutex
	entries []view.LogEntry
	changed chan struct{}
	graphs  []view.Graph
	served  map[uint64]bool
	reads   atomic.Int64 // calls of Log
}

func (f *fakeSource) add(e view.LogEntry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e.Seq = uint64(len(f.entries) + 1)
	f.entries = append(f.entries, e)
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeSource) Log(_ context.Context, after uint64, limit int) ([]view.LogEntry, error) {
	f.reads.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []view.LogEntry
	for _, e := range f.entries {
		if e.Seq > after {
			out = append(out, e)
		}
	}
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

func (f *fakeSource) LogChanged() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *fakeSource) Served(_ string, id uint64) bool { return f.served[id] }

func (f *fakeSource) Scenarios(context.Context) ([]view.Graph, error) { return f.graphs, nil }

// sampleSource opens the sample cassette read-only behind a fakeSource.
func sampleSource(t testing.TB) *fakeSource {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sample.cassette")
	uitest.Cassette(t, path)
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &fakeSource{CassetteSource: view.CassetteSource{C: c}, changed: make(chan struct{}), served: map[uint64]bool{}}
}

// serve starts the view over src on an httptest server.
func serve(t testing.TB, src view.Source, token string) (*httptest.Server, *view.Handler) {
	t.Helper()
	h, err := view.New(view.Options{Source: src, AdminToken: token, Mode: "test"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	return srv, h
}

// get fetches a URL with optional request edits and returns the response
// and its body.
func get(t testing.TB, url string, edit ...func(*http.Request)) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range edit {
		e(req)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// containsAll reports the first of wants that body lacks, or "".
func containsAll(body string, wants ...string) string {
	for _, w := range wants {
		if !strings.Contains(body, w) {
			return w
		}
	}
	return ""
}
