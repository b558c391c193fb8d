package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/exampletest"
	"github.com/llmproxy/llmproxy/store"
)

// BenchmarkReplayStart times `llmproxy replay`, a real process, from its
// start to its listening line, on cassettes built by `llmproxy import` from
// an export of 1 000 and 10 000 interactions (add 100 000 with
// LLMPROXY_BENCH_STARTUP=100000; it takes a minute to build). Each
// interaction answers with about 2 KB of JSON, as the lookup-scaling
// benchmark's do. Where /proc is there it also reports the process's
// resident memory at that line (rss-MB) and its peak so far (peak-MB): the
// check of the whole file at open must not map the file in. Run it with a
// few iterations: go test -run XXX -bench ReplayStart -benchtime 5x .
func BenchmarkReplayStart(b *testing.B) {
	sizes := []int{1_000, 10_000}
	if n, err := strconv.Atoi(os.Getenv("LLMPROXY_BENCH_STARTUP")); err == nil && n > 0 {
		sizes = append(sizes, n)
	}
	bin := exampletest.BuildLLMProxy(b)
	dir := b.TempDir()
	for _, n := range sizes {
		path := filepath.Join(dir, fmt.Sprintf("c%d.cassette", n))
		importBenchCassette(b, path, n)
		if st, err := os.Stat(path); err == nil {
			b.Logf("%d interactions: %d MB", n, st.Size()>>20)
		}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			var rss, peak float64
			for b.Loop() {
				r, p := startReplay(b, bin, path)
				rss, peak = max(rss, r), max(peak, p)
			}
			if peak > 0 {
				b.ReportMetric(rss, "rss-MB")
				b.ReportMetric(peak, "peak-MB")
			}
		})
	}
}

// importBenchCassette writes an export of n distinct chat requests, each
// answered with about 2 KB of JSON, and imports it into path.
func importBenchCassette(b *testing.B, path string, n int) {
	b.Helper()
	answer := `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("Crumpet is a small island nation. ", 56) + `"},"finish_reason":"stop"}]}`
	ct := &cassette.Contents{Meta: store.Meta{FormatVersion: store.FormatVersion, Version: "bench"}}
	for i := range n {
		ct.Interactions = append(ct.Interactions, &cassette.Interaction{
			ID: uint64(i + 1), Upstream: cassette.DefaultUpstream, Provider: "openai", Kind: "openai-chat",
			Request: cassette.Request{Method: http.MethodPost, Path: "/v1/chat/completions",
				Headers: http.Header{"Content-Type": {"application/json"}},
				Body:    cassette.Body(fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"question %d"}]}`, i))},
			Response: cassette.Response{Status: http.StatusOK, Headers: http.Header{"Content-Type": {"application/json"}}, Body: cassette.Body(answer)},
		})
	}
	export := filepath.Join(filepath.Dir(path), fmt.Sprintf("export-%d.json", n))
	var buf bytes.Buffer
	if err := cassette.WriteExport(&buf, ct); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(export, buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	var stderr bytes.Buffer
	if err := runImport(b.Context(), []string{"--in", export, "--cassette", path}, io.Discard, &stderr); err != nil {
		b.Fatalf("import: %v %s", err, stderr.Bytes())
	}
}

// startReplay starts `llmproxy replay` on path, waits for its listening
// line (the time measured), reads its memory, and stops it.
func startReplay(b *testing.B, bin, path string) (rssMB, peakMB float64) {
	b.Helper()
	cmd := exec.Command(bin, "replay", "--cassette", path, "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "LLMPROXY_CASSETTE=", "LLMPROXY_LISTEN=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Scan()
		line <- sc.Text()
		io.Copy(io.Discard, stdout)
	}()
	select {
	case l := <-line:
		if !strings.Contains(l, "listening") {
			b.Fatalf("first line %q, want the listening line", l)
		}
	case <-time.After(30 * time.Second):
		b.Fatal("no listening line after 30 s")
	}
	// What follows, and stopping the process, is not timed.
	b.StopTimer()
	defer b.StartTimer()
	defer cmd.Wait()
	defer cmd.Process.Kill()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	for l := range strings.Lines(string(status)) {
		f := strings.Fields(l)
		if len(f) == 3 && f[2] == "kB" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			switch f[0] {
			case "VmRSS:":
				rssMB = kb / 1024
			case "VmHWM:":
				peakMB = kb / 1024
			}
		}
	}
	return rssMB, peakMB
}
