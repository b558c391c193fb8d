package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/proxy"
)

// heldStream is an upstream that sends one SSE event and then holds the
// stream open until release is closed.
func heldStream(t *testing.T) (url string, release func()) {
	t.Helper()
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-hold:
		case <-r.Context().Done():
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	var closed bool
	return srv.URL, func() {
		if !closed {
			closed = true
			close(hold)
		}
	}
}

// startHeld starts a streamed chat request through the proxy at base and
// returns once its first event arrived; the stream stays open.
func startHeld(t *testing.T, base, cassetteName string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("Content-Type", "application/json")
	if cassetteName != "" {
		req.Header.Set(proxy.CassetteHeader, cassetteName)
	}
	first := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- err
			return
		}
		defer resp.Body.Close()
		_, err = bufio.NewReader(resp.Body).ReadString('\n')
		first <- err
		io.Copy(io.Discard, resp.Body)
	}()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

// TestAPIDoesNotWaitForRecordings: the API answers from what is written
// while a recording streams, on the same cassette and on others.
func TestAPIDoesNotWaitForRecordings(t *testing.T) {
	for _, dir := range []bool{false, true} {
		name := map[bool]string{false: "cassette", true: "cassette-dir"}[dir]
		t.Run(name, func(t *testing.T) {
			up, release := heldStream(t)
			defer release()
			var base, cas string
			if dir {
				d := t.TempDir()
				base, _ = startDirProxy(t, proxy.ModeRecord, d, up)
				cas = "a"
			} else {
				base = startProxy(t, proxy.ModeRecord, cassettePath(t), up).URL()
			}
			startHeld(t, base, cas)
			for _, p := range []string{"/_llmproxy/log", "/_llmproxy/interactions", "/_llmproxy/unused"} {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				req, _ := http.NewRequestWithContext(ctx, "GET", base+p, nil)
				if dir {
					req.Header.Set(proxy.CassetteHeader, cas)
				}
				resp, err := http.DefaultClient.Do(req)
				cancel()
				if err != nil {
					t.Fatalf("GET %s while a recording streams: %v (it waited for the recording)", p, err)
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("GET %s: %d", p, resp.StatusCode)
				}
			}
		})
	}
}

// recordInDir records one chat interaction into DIR/name.cassette.
func recordInDir(t *testing.T, dir, name string) {
	t.Helper()
	up := fake.New(t, fake.OpenAIChat(weatherLoop))
	base, stop := startDirProxy(t, proxy.ModeRecord, dir, up.URL())
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"What's the weather in Paris?"}]}`))
	req.Header.Set(proxy.CassetteHeader, name)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	stop()
}

// TestAPIReadsNeverWrite: in record mode with matching rules that differ
// from the cassette's index, a GET of the API neither reindexes the
// cassette nor keeps its writer lock.
func TestAPIReadsNeverWrite(t *testing.T) {
	dir := t.TempDir()
	recordInDir(t, dir, "a")
	path := filepath.Join(dir, "a.cassette")
	before := rawCassette(t, path)
	m, err := cassette.NewIndexer(match.Rules{Ignore: []string{"temperature"}}, mustRedactor(t))
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(proxy.Config{Mode: proxy.ModeRecord, CassetteDir: dir, Indexer: m, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer func() { srv.Close(); p.Close() }()
	for _, q := range []string{"/_llmproxy/interactions?cassette=a", "/_llmproxy/unused?cassette=a", "/_llmproxy/log?cassette=a", "/_llmproxy/fixtures/x?cassette=a"} {
		resp, err := http.Get(srv.URL + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if !bytes.Equal(before, rawCassette(t, path)) {
		t.Error("a GET of the API changed the cassette file")
	}
	c, err := cassette.Open(path, cassette.Options{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("after a GET of the API, the cassette cannot be opened for writing: %v", err)
	}
	c.Close()
}

func mustRedactor(t *testing.T) *cassette.Redactor {
	r, err := cassette.NewRedactor(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestLogOfMissingCassetteIs404: the log, like the other readers, names
// a cassette that does not exist with a 404.
func TestLogOfMissingCassetteIs404(t *testing.T) {
	base, _ := startDirProxy(t, proxy.ModeRecord, t.TempDir(), "")
	for _, p := range []string{"log", "unused", "interactions"} {
		resp, err := http.Get(base + "/_llmproxy/" + p + "?cassette=nope")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /_llmproxy/%s?cassette=nope: %d, want 404", p, resp.StatusCode)
		}
	}
}

// TestEscapedReservedPrefixIsNotForwarded: no spelling of /_llmproxy/
// reaches an upstream; an escaped one is a 400 naming the rule.
func TestEscapedReservedPrefixIsNotForwarded(t *testing.T) {
	hit := make(chan string, 10)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hit <- r.URL.RawPath + " " + r.URL.Path
		w.WriteHeader(200)
	}))
	defer up.Close()
	h := startProxy(t, proxy.ModeRecord, cassettePath(t), up.URL)
	for _, p := range []string{"/%5fllmproxy/log", "/%5Fllmproxy/log", "/_llmproxy%2Flog", "/_llmproxy%2flog", "/%255fllmproxy/log", "/_llmprox%79/health", "/%5fllmproxy"} {
		req, _ := http.NewRequest("GET", h.URL()+p, nil)
		req.URL.Opaque = "" // keep the escaping as written
		req.URL.RawPath = p
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "/_llmproxy/") {
			t.Errorf("GET %s: %d %s, want a 400 naming the reserved prefix", p, resp.StatusCode, b)
		}
	}
	select {
	case got := <-hit:
		t.Errorf("an escaped reserved path reached the upstream: %s", got)
	default:
	}
}

// TestCassetteDirRefusesSymlinks: a cassette whose file is a symlink,
// dangling or not, is refused with a 400 naming the rule, and nothing is
// created through it.
func TestCassetteDirRefusesSymlinks(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	target := filepath.Join(elsewhere, "file")
	if err := os.Symlink(target, filepath.Join(dir, "x.cassette")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	recordInDir(t, elsewhere, "real")
	if err := os.Symlink(filepath.Join(elsewhere, "real.cassette"), filepath.Join(dir, "y.cassette")); err != nil {
		t.Fatal(err)
	}
	up := fake.New(t, fake.OpenAIChat(weatherLoop))
	base, _ := startDirProxy(t, proxy.ModeRecord, dir, up.URL())
	for _, name := range []string{"x", "y"} {
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"What's the weather in Paris?"}]}`))
		req.Header.Set(proxy.CassetteHeader, name)
		for _, r := range []*http.Request{req, mustGet(t, base+"/_llmproxy/interactions?cassette="+name)} {
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "symlink") {
				t.Errorf("%s %s (%s): %d %s, want 400 naming the symlink rule", r.Method, r.URL.Path, name, resp.StatusCode, b)
			}
		}
	}
	if _, err := os.Lstat(target); err == nil {
		t.Error("record created a file through a dangling symlink")
	}
}

func mustGet(t *testing.T, url string) *http.Request {
	r, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// openIn counts this process's open files under dir.
func openIn(t *testing.T, dir string) int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(l, dir) {
			n++
		}
	}
	return n
}

// openSettled is openIn once it is at most max, or after a second: the
// handler that served the last answer may still be releasing its cassette.
func openSettled(t *testing.T, dir string, max int) int {
	deadline := time.Now().Add(time.Second)
	for {
		n := openIn(t, dir)
		if n <= max || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// chatIn sends the weather question to the cassette name and returns the status.
func chatIn(t *testing.T, base, name string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"What's the weather in Paris?"}]}`))
	req.Header.Set(proxy.CassetteHeader, name)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestCassetteDirBoundsOpenFiles: past --max-open-cassettes the least
// recently used cassette is closed, its lock released, and reopened on
// demand with what this process consumed of it.
func TestCassetteDirBoundsOpenFiles(t *testing.T) {
	dir := t.TempDir()
	up := fake.New(t, fake.OpenAIChat(weatherLoop))
	u, _ := url.Parse(up.URL())
	start := func(mode proxy.Mode) (*proxy.Server, string) {
		cfg := proxy.Config{Mode: mode, CassetteDir: dir, MaxOpenCassettes: 3, Version: "test",
			Upstreams: map[string]*url.URL{"openai": u}, Default: u}
		if mode == proxy.ModeReplay {
			cfg.Transport = forbidden{t}
		}
		p, err := proxy.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(p)
		t.Cleanup(func() { srv.Close(); p.Close() })
		return p, srv.URL
	}
	rec, base := start(proxy.ModeRecord)
	for i := range 10 {
		if got := chatIn(t, base, fmt.Sprint("c", i)); got != 200 {
			t.Fatalf("record c%d: %d", i, got)
		}
		if n := openSettled(t, dir, 3); n > 3 {
			t.Fatalf("after %d cassettes, %d files open under the directory; want at most 3", i+1, n)
		}
	}
	// c0 was closed: its writer lock is released.
	if c, err := cassette.Open(filepath.Join(dir, "c0.cassette"), cassette.Options{LockTimeout: 200 * time.Millisecond}); err != nil {
		t.Errorf("an evicted cassette still holds its lock: %v", err)
	} else {
		c.Close()
	}
	rec.Close()
	_, base = start(proxy.ModeReplay)
	for i := range 10 {
		if got := chatIn(t, base, fmt.Sprint("c", i)); got != 200 {
			t.Errorf("replay c%d: %d", i, got)
		}
	}
	// c0 was closed and reopened: its one interaction stays consumed.
	if got := chatIn(t, base, "c0"); got != http.StatusBadRequest {
		t.Errorf("a second replay of c0's only interaction after its cassette was reopened: %d, want a 400 miss", got)
	}
	if n := openSettled(t, dir, 3); n > 3 {
		t.Errorf("%d files open under the directory in replay; want at most 3", n)
	}
}

// TestLogIsBoundedAndPaged: a miss's tool results are kept truncated to a
// bound with a marker, and the log pages with ?limit=&after=.
func TestLogIsBoundedAndPaged(t *testing.T) {
	h := startProxy(t, proxy.ModeReplay, emptyCassette(t), "")
	big := strings.Repeat("x", 100<<10)
	for i := range 5 {
		body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"q%d"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":%q}]}`, i, big)
		resp, err := http.Post(h.URL()+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	type page struct {
		Entries []proxy.LogEntry `json:"entries"`
		Next    uint64           `json:"next"`
	}
	get := func(q string) page {
		resp, err := http.Get(h.URL() + "/_llmproxy/log" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p page
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	all := get("")
	if len(all.Entries) != 5 {
		t.Fatalf("%d entries, want 5", len(all.Entries))
	}
	for _, e := range all.Entries {
		if len(e.ToolResults) != 1 || len(e.ToolResults[0].Content) > 5<<10 || !strings.Contains(string(e.ToolResults[0].Content), "truncated") {
			t.Fatalf("a miss's 100 KiB tool result is kept as %d bytes, want at most 5 KiB with a truncation marker", len(e.ToolResults[0].Content))
		}
	}
	p1 := get("?limit=2")
	p2 := get(fmt.Sprintf("?limit=2&after=%d", p1.Next))
	p3 := get(fmt.Sprintf("?limit=2&after=%d", p2.Next))
	if len(p1.Entries) != 2 || len(p2.Entries) != 2 || len(p3.Entries) != 1 {
		t.Fatalf("pages of %d, %d, %d entries; want 2, 2, 1", len(p1.Entries), len(p2.Entries), len(p3.Entries))
	}
	if p1.Entries[0].Time != all.Entries[0].Time || p3.Entries[0].Time != all.Entries[4].Time {
		t.Error("the pages are not the log in order")
	}
}

// emptyCassette is the path of a new, empty cassette.
func emptyCassette(t *testing.T) string {
	path := cassettePath(t)
	c, err := cassette.Open(path, cassette.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	return path
}
