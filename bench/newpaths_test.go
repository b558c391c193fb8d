package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/proxy"
)

// TestParseBench: the report reads go test's benchmark lines, the
// -GOMAXPROCS suffix dropped and every metric by its unit, and nothing
// else.
func TestParseBench(t *testing.T) {
	out := []byte(`goos: linux
pkg: github.com/llmproxy/llmproxy/proxy
BenchmarkReplayEventStream-2   	    2203	    156387 ns/op	       200.0 messages	         1.732 replay/bare	  211245 B/op	      83 allocs/op
BenchmarkReplayMCP/model_openai-chat_(baseline)-2         	   10000	     41140 ns/op	     14045 gc-ns/op
BenchmarkReplayMCP/model_openai-chat_(baseline)-2         	   10000	     67784 ns/op	     15526 gc-ns/op
BenchmarkReplayMCP/model_openai-chat_(baseline)-2         	   10000	     50000 ns/op
BenchmarkSessionSwitch	100	19636405 ns/op
BenchmarkBroken-2   	    many	    1 ns/op
BenchmarkOdd-2   	    1	    1 ns/op	2
--- FAIL: BenchmarkX
PASS
ok  	github.com/llmproxy/llmproxy/proxy	4.136s
`)
	rs := parseBench(out)
	if len(rs) != 5 {
		t.Fatalf("%d results, want 5: %+v", len(rs), rs)
	}
	for _, tc := range []struct {
		name, unit string
		want       float64
		runs       int
	}{
		{"BenchmarkReplayEventStream", "replay/bare", 1.732, 1},
		{"BenchmarkReplayEventStream", "B/op", 211245, 1},
		{"BenchmarkReplayMCP/model_openai-chat_(baseline)", "ns/op", 50000, 3},
		{"BenchmarkReplayMCP/model_openai-chat_(baseline)", "gc-ns/op", (14045 + 15526) / 2.0, 2},
		{"BenchmarkSessionSwitch", "ns/op", 19636405, 1},
		{"BenchmarkSessionSwitch", "cpu-ms/op", 0, 0},
		{"BenchmarkBroken", "ns/op", 0, 0},
	} {
		got, runs := benchMedian(rs, tc.name, tc.unit)
		if got != tc.want || runs != tc.runs {
			t.Errorf("%s %s: %v over %d runs, want %v over %d", tc.name, tc.unit, got, runs, tc.want, tc.runs)
		}
	}
}

// TestConverseReplay: the ConverseStream case's replay server and its
// limit answer the chat path with the same recorded frames, byte for
// byte, as the load generator checks them.
func TestConverseReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "converse.cassette")
	if err := writeConverseCassette(path); err != nil {
		t.Fatal(err)
	}
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := proxy.New(proxy.Config{Cassette: c, Transport: refuse{}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	bare, err := newFrameServer()
	if err != nil {
		t.Fatal(err)
	}
	_, frames, err := converseStream()
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Join(frames, nil)
	for name, h := range map[string]http.Handler{"replay": p, "bare": bare} {
		srv := httptest.NewServer(atPath(conversePath, h))
		status, got, err := fetch(newClient(1), srv.URL, converseRequest)
		if err == nil {
			err = check(status, got, want)
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if name == "replay" {
			// Another question is a miss, not the recording.
			if status, got, _ := fetch(newClient(1), srv.URL, requestBody(0, true)); check(status, got, want) == nil {
				t.Errorf("replay answered another request with the ConverseStream")
			}
		}
		srv.Close()
	}
}
