package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/proxy"
)

// sessionCassettes is the size of the cassettes the session benchmarks
// switch between (issue 24: a switch costs at most 5 ms at 1 000).
const sessionCassettes = 1000

// writeSessionCassettes writes two cassettes of n interactions under dir,
// a.cassette and b.cassette, as replay reads them.
func writeSessionCassettes(b *testing.B, dir string, n int) {
	b.Helper()
	for _, name := range []string{"a", "b"} {
		all := make([]*cassette.Interaction, n)
		for k := range all {
			all[k] = interaction(requestBody(k, false), jsonRecorded(scaleAnswer(k)))
		}
		if err := writeCassette(filepath.Join(dir, name+".cassette"), all); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSessionSwitch times PUT /_llmproxy/session alternating between
// two cassettes of 1 000 interactions in replay, in process: the previous
// session ends (its summary lists its 1 000 unused interactions) and the
// next cassette opens and is counted. BenchmarkSessionOpenBaseline times
// what `llmproxy replay --cassette` does with one at startup and shutdown:
// open it read-only, build the server, close both.
func BenchmarkSessionSwitch(b *testing.B) {
	dir := b.TempDir()
	writeSessionCassettes(b, dir, sessionCassettes)
	p, err := proxy.New(proxy.Config{CassetteDir: dir, Transport: refuse{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		body := fmt.Sprintf(`{"cassette":"%c.cassette"}`, "ab"[n%2])
		n++
		r := httptest.NewRequest(http.MethodPut, "/_llmproxy/session", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("PUT: %d %s", w.Code, w.Body)
		}
	}
}

func BenchmarkSessionOpenBaseline(b *testing.B) {
	dir := b.TempDir()
	writeSessionCassettes(b, dir, sessionCassettes)
	path := filepath.Join(dir, "a.cassette")
	b.ReportAllocs()
	for b.Loop() {
		c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		p, err := proxy.New(proxy.Config{Cassette: c, Transport: refuse{}})
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Close(); err != nil {
			b.Fatal(err)
		}
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSessionCassetteOpen times opening and closing the cassette
// alone, read-only: the part of either above that no server setting
// changes.
func BenchmarkSessionCassetteOpen(b *testing.B) {
	dir := b.TempDir()
	writeSessionCassettes(b, dir, sessionCassettes)
	path := filepath.Join(dir, "a.cassette")
	b.ReportAllocs()
	for b.Loop() {
		c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
