package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestProbe64Conns compares builds of the server children at 64
// connections (BENCH_PROBE_CONNS for another count), the JSON replay case, round by round: set
// BENCH_PROBE to a comma-separated list of name=kind:binary[:fault], each
// binary a build of this bench (go build -o /tmp/b1 .) from the product
// tree under test, e.g.
//
//	BENCH_PROBE=old=replay:/tmp/b0,new=replay:/tmp/b1,bare=bare:/tmp/b0 go test -run Probe64 -v .
//
// With BENCH_PROBE_MOCK naming a payload of the mock scenario ("2 KB
// text, JSON", …) it sends that case's load instead, for the kinds mock
// and mock-bare.
//
// It logs each child's throughput and CPU per request; BENCH_PROBE_PROFILE
// names a directory for their CPU profiles. Without BENCH_PROBE it skips:
// it is a tool for bench/findings.md, not a check.
func TestProbe64Conns(t *testing.T) {
	spec := os.Getenv("BENCH_PROBE")
	if spec == "" {
		t.Skip("BENCH_PROBE not set")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "replay.cassette")
	if err := buildReplayCassette(path); err != nil {
		t.Fatal(err)
	}
	type probed struct {
		s server
		t tally
	}
	var ps []*probed
	for _, item := range strings.Split(spec, ",") {
		name, rest, _ := strings.Cut(item, "=")
		f := strings.Split(rest, ":")
		if len(f) < 2 {
			t.Fatalf("BENCH_PROBE: %q is not name=kind:binary[:fault]", item)
		}
		o := serveOptions{kind: f[0], exe: f[1]}
		if o.kind == "replay" {
			o.cassette = path
		}
		if len(f) > 2 {
			o.fault = f[2]
		}
		if d := os.Getenv("BENCH_PROBE_PROFILE"); d != "" {
			o.cpuprofile = filepath.Join(d, name+".pprof")
		}
		c, err := startChild(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.stop() })
		ps = append(ps, &probed{s: server{name: name, base: c.URL, proc: c, alt: openAI429}})
	}
	conns := 64
	if v := os.Getenv("BENCH_PROBE_CONNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("BENCH_PROBE_CONNS: %q is not a positive count", v)
		}
		conns = n
	}
	body, want := requestBody(0, false), jsonResponse()
	base := load{body: func(int) []byte { return body }, want: same(want)}
	if payload := os.Getenv("BENCH_PROBE_MOCK"); payload != "" {
		base = probeMockLoad(t, payload)
	}
	for range 6 {
		for _, p := range ps {
			l := base
			l.conns, l.dur, l.max = conns, 700*time.Millisecond, 1<<30
			c := newClient(conns)
			if err := p.s.measure(l, c, &p.t); err != nil {
				t.Fatal(err)
			}
			c.CloseIdleConnections()
		}
	}
	for _, p := range ps {
		n := float64(p.t.n)
		t.Logf("%-12s %7.0f req/s  server CPU %5.1f µs/req  load generator %5.1f µs/req  errors %d  alt answers %d",
			p.s.name, n/p.t.elapsed.Seconds(), float64(p.t.cpu.Microseconds())/n, float64(p.t.genCPU.Microseconds())/n, p.t.errs, p.t.alt)
	}
}

// probeMockLoad is the load of the mock case named payload, as
// mockScenario sends it.
func probeMockLoad(t *testing.T, payload string) load {
	i := slices.IndexFunc(mockCases(), func(c mockCase) bool { return c.payload == payload })
	if i < 0 {
		t.Fatalf("BENCH_PROBE_MOCK: %q is no mock payload", payload)
	}
	cs := mockCases()[i]
	rounds, err := mockRounds()
	if err != nil {
		t.Fatal(err)
	}
	return mockLoad(cs, rounds[cs.payload], conversations())
}
