package proxy_test

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/store"
)

// copyV1Cassette copies the format-1 cassette of package cassette's
// testdata (every response shape, written by the format-1 code) to dir.
func copyV1Cassette(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "cassette", "testdata", "v1.cassette"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// replayAll sends each recorded request of the cassette at path to a proxy
// over it, and describes what came back: status, the headers a client
// sees of the recording, and the body.
func replayAll(t *testing.T, mode proxy.Mode, path string, edit func(*proxy.Config)) []string {
	t.Helper()
	all := recordedIn(t, path)
	h := startProxy(t, mode, path, "http://127.0.0.1:1", func(cfg *proxy.Config) {
		u, _ := url.Parse("http://127.0.0.1:1")
		cfg.Upstreams["files"] = u
		cfg.Transport = forbidden{t}
		if edit != nil {
			edit(cfg)
		}
	})
	defer h.stop()
	var got []string
	for _, i := range all {
		u := h.URL() + cassette.ProxyPath(i.Upstream, i.Request.Path)
		if i.Request.Query != "" {
			u += "?" + i.Request.Query
		}
		req, err := http.NewRequest(i.Request.Method, u, bytes.NewReader(i.Request.Body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = i.Request.Headers.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != i.Response.Status || !bytes.Equal(body, i.Response.Bytes()) {
			t.Errorf("%s: interaction %d answered %d %q, recorded %d %q", path, i.ID, resp.StatusCode, body, i.Response.Status, i.Response.Bytes())
		}
		d := fmt.Sprintf("%d %d", i.ID, resp.StatusCode)
		for _, k := range slices.Sorted(maps.Keys(i.Response.Headers)) {
			d += fmt.Sprintf(" %s=%q", k, resp.Header.Values(k))
		}
		got = append(got, fmt.Sprintf("%s cl=%q body=%q", d, resp.Header.Get("Content-Length"), body))
	}
	return got
}

// A format-1 cassette and its migration to format 2 replay the same bytes,
// whether served from the mapped page (read-only, unpaced) or copied out
// (a cassette open for writing, or paced replay).
func TestReplayFormat1And2Alike(t *testing.T) {
	dir := t.TempDir()
	v1 := copyV1Cassette(t, dir, "v1.cassette")
	v2 := copyV1Cassette(t, dir, "v2.cassette")
	if mig, err := cassette.Migrate(v2, cassette.Options{Version: "test"}); err != nil || mig.From != 1 {
		t.Fatalf("Migrate = %+v, %v", mig, err)
	}
	want := replayAll(t, proxy.ModeReplay, v1, nil)
	if len(want) != 6 {
		t.Fatalf("replayed %d interactions of the fixture, want 6", len(want))
	}
	paced := func(cfg *proxy.Config) { cfg.Pace = proxy.PaceRecorded }
	for _, tc := range []struct {
		name string
		mode proxy.Mode
		path string
		edit func(*proxy.Config)
	}{
		{"format 2 from the page", proxy.ModeReplay, v2, nil},
		{"format 2 paced", proxy.ModeReplay, v2, paced},
		{"format 2 in auto mode", proxy.ModeAuto, v2, nil},
		{"format 1 paced", proxy.ModeReplay, v1, paced},
		{"format 1 in auto mode", proxy.ModeAuto, v1, nil},
	} {
		got := replayAll(t, tc.mode, tc.path, tc.edit)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s served\n%q\nformat 1 from the page served\n%q", tc.name, got, want)
		}
	}
}

// A damaged record is a 500 whose message names the cassette, the
// interaction and what is wrong; the server goes on serving.
func TestReplayDamagedRecord(t *testing.T) {
	r, err := cassette.NewRedactor(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := cassette.NewIndexer(match.Rules{}, r)
	if err != nil {
		t.Fatal(err)
	}
	i := &cassette.Interaction{Upstream: "openai", Kind: "openai-chat",
		Request:  cassette.Request{Method: http.MethodPost, Path: chatAPI.path, Headers: http.Header{"Content-Type": {"application/json"}}, Body: []byte(chatAPI.body)},
		Response: cassette.Response{Status: 200, Body: []byte(`{}`)}}
	// The server's matcher: the default upstream is the openai one, so
	// the two spellings of its routes are one.
	served := m.DefaultRoute()
	key, shape, err := served.Keys(i)
	if err != nil {
		t.Fatal(err)
	}
	path := cassettePath(t)
	st, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A format-2 record whose event table ends past its events.
	bad := []byte{0x02, 0, 0, 0, 1, 16, 'x', 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0}
	err = st.Replace(store.Contents{Records: []store.Record{{ID: 1, Key: key, Shape: shape, Value: bad}}, Meta: store.Meta{IndexRules: served.Fingerprint()}})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	h := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.Indexer, c.Redactor = m, r })
	for range 2 {
		got := send(t, h.URL(), chatAPI.path, chatAPI.body)
		if got.status != http.StatusInternalServerError || !bytes.Contains(got.body, []byte("interaction 1")) ||
			!bytes.Contains(got.body, []byte("damaged interaction record")) || !bytes.Contains(got.body, []byte(filepath.Base(path))) {
			t.Errorf("a damaged record answered %d %s, want 500 naming the cassette, interaction 1 and the damage", got.status, got.body)
		}
	}
}
