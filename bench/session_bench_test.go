package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/proxy"
)

// sessionCassettes is the size of the cassettes the session benchmarks
// switch between (issue 24: a switch costs at most 5 ms at 1 000), and
// sessionFiles how many distinct files they rotate through: a test suite
// opens each of its cassettes once, so nothing a switch does may be
// served from the open of the same file before.
const (
	sessionCassettes = 1000
	sessionFiles     = 8
)

// writeSessionCassettes writes sessionFiles cassettes of n interactions
// under dir, as replay reads them, each with its own requests and answers,
// and returns their names.
func writeSessionCassettes(b *testing.B, dir string, n int) []string {
	b.Helper()
	names := make([]string, sessionFiles)
	for f := range names {
		names[f] = fmt.Sprintf("s%d.cassette", f)
		all := make([]*cassette.Interaction, n)
		for k := range all {
			all[k] = interaction(requestBody(f*n+k, false), jsonRecorded(scaleAnswer(f*n+k)))
		}
		if err := writeCassette(filepath.Join(dir, names[f]), all); err != nil {
			b.Fatal(err)
		}
	}
	return names
}

// reportCPU reports the CPU time this process used per iteration since
// start: on a shared machine, a steadier figure than the wall time.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(selfCPU()-start)/float64(b.N)/1e6, "cpu-ms/op")
}

// BenchmarkSessionSwitch times PUT /_llmproxy/session rotating through
// sessionFiles cassettes of 1 000 interactions in replay, in process: the
// previous session ends (its summary lists 100 of its 1 000 unused
// interactions and counts them all) and the next cassette opens, a file
// not opened since sessionFiles-1 others were, and is counted.
// BenchmarkSessionOpenBaseline times what `llmproxy replay --cassette`
// does with one at startup and shutdown: open it read-only, build the
// server, close both; it rotates through the same files.
func BenchmarkSessionSwitch(b *testing.B) {
	dir := b.TempDir()
	names := writeSessionCassettes(b, dir, sessionCassettes)
	p, err := proxy.New(proxy.Config{CassetteDir: dir, Transport: refuse{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	n := 0
	b.ReportAllocs()
	defer reportCPU(b, selfCPU())
	for b.Loop() {
		body := fmt.Sprintf(`{"cassette":%q}`, names[n%len(names)])
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
	names := writeSessionCassettes(b, dir, sessionCassettes)
	n := 0
	b.ReportAllocs()
	defer reportCPU(b, selfCPU())
	for b.Loop() {
		c, err := cassette.Open(filepath.Join(dir, names[n%len(names)]), cassette.Options{ReadOnly: true})
		n++
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

// BenchmarkSessionCassetteOpen times opening and closing the cassettes
// alone, read-only, rotating through the same files: the part of either
// above that no server setting changes.
func BenchmarkSessionCassetteOpen(b *testing.B) {
	dir := b.TempDir()
	names := writeSessionCassettes(b, dir, sessionCassettes)
	n := 0
	b.ReportAllocs()
	defer reportCPU(b, selfCPU())
	for b.Loop() {
		c, err := cassette.Open(filepath.Join(dir, names[n%len(names)]), cassette.Options{ReadOnly: true})
		n++
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
