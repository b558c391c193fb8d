package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockBase is the origin of the SSE timestamps: the upstream and the
// client both live in this process and read the same monotonic clock.
var clockBase = time.Now()

func clock() int64 { return int64(time.Since(clockBase)) }

// recordResult compares the same exchanges sent direct to the fake
// upstream and through llmproxy in record mode.
type recordResult struct {
	// Where is the file system the cassette is written to.
	Where             string
	Requests, Streams int
	Gap               time.Duration
	// JSON is the request latency of the 2 KB JSON exchange.
	JSONDirect, JSONProxy tally
	// Event is the per-event delay of the SSE stream: from the upstream
	// writing an event to the client reading it.
	EventDirect, EventProxy []time.Duration
	// TTFT is the time from sending the request to reading the first
	// content event.
	TTFTDirect, TTFTProxy []time.Duration
	// Recorded is the number of interactions the proxy wrote.
	Recorded int
	// Sync is the latency of fsync after a 4 KB write on the cassette's
	// file system: bbolt syncs twice per transaction.
	Sync []time.Duration
}

// syncLatency times n fsyncs, each after a 4 KB write, in dir.
func syncLatency(dir string, n int) ([]time.Duration, error) {
	f, err := os.CreateTemp(dir, "sync-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	page := make([]byte, 4096)
	out := make([]time.Duration, 0, n)
	for k := range n {
		if _, err := f.WriteAt(page, int64(k%64)*4096); err != nil {
			return nil, err
		}
		t0 := time.Now()
		if err := f.Sync(); err != nil {
			return nil, err
		}
		out = append(out, time.Since(t0))
	}
	return out, nil
}

// recordScenario measures what recording adds: one client connection,
// requests alternating between the upstream direct and the proxy, which
// writes its cassette in dir.
func recordScenario(p plan, dir, profile string) (*recordResult, error) {
	up := newUpstream()
	up.gap = p.gap
	up.stamp = clock
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: up, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	direct := "http://" + ln.Addr().String()

	path := filepath.Join(dir, "record.cassette")
	c, err := startChild(dir, serveOptions{kind: "record", cassette: path, upstream: direct, cpuprofile: p.profile(profile)})
	if err != nil {
		return nil, err
	}
	res := &recordResult{Where: fileSystem(dir), Requests: p.recordRequests, Streams: p.recordStreams, Gap: p.gap}
	err = func() error {
		dc, pc := newClient(1), newClient(1)
		defer dc.CloseIdleConnections()
		defer pc.CloseIdleConnections()
		body := requestBody(0, false)
		l := load{conns: 1, dur: time.Hour, max: 1, body: func(int) []byte { return body }, want: same(jsonResponse())}
		for range 20 { // warm both paths
			l.run(dc, direct, &tally{})
			l.run(pc, c.URL, &tally{})
		}
		res.JSONDirect, res.JSONProxy = tally{}, tally{}
		for range p.recordRequests {
			l.run(dc, direct, &res.JSONDirect)
			l.run(pc, c.URL, &res.JSONProxy)
		}
		for _, t := range []*tally{&res.JSONDirect, &res.JSONProxy} {
			if t.errs > 0 {
				return fmt.Errorf("record JSON: %d errors, first: %v", t.errs, t.err)
			}
		}
		sbody := requestBody(0, true)
		for k := range p.recordStreams + 1 {
			for _, side := range []struct {
				c     *http.Client
				base  string
				ev    *[]time.Duration
				first *[]time.Duration
			}{{dc, direct, &res.EventDirect, &res.TTFTDirect}, {pc, c.URL, &res.EventProxy, &res.TTFTProxy}} {
				ttft, delays, err := readStream(side.c, side.base, sbody)
				if err != nil {
					return fmt.Errorf("record SSE via %s: %w", side.base, err)
				}
				if k == 0 {
					continue // warm-up
				}
				*side.ev = append(*side.ev, delays...)
				*side.first = append(*side.first, ttft)
			}
		}
		return nil
	}()
	if serr := c.stop(); err == nil {
		err = serr
	}
	if err != nil {
		return nil, err
	}
	res.Recorded = 20 + p.recordRequests + p.recordStreams + 1
	if res.Sync, err = syncLatency(dir, 50); err != nil {
		return nil, err
	}
	p.logf("record on %s: fsync p50 %.3f ms", res.Where, ms(percentile(res.Sync, 0.5)))
	p.logf("record 2 KB JSON         direct p50 %6.3f ms p99 %6.3f ms | proxy p50 %6.3f ms p99 %6.3f ms",
		ms(res.JSONDirect.pct(0.5)), ms(res.JSONDirect.pct(0.99)), ms(res.JSONProxy.pct(0.5)), ms(res.JSONProxy.pct(0.99)))
	p.logf("record SSE event delay   direct p50 %6.3f ms p99 %6.3f ms | proxy p50 %6.3f ms p99 %6.3f ms",
		ms(percentile(res.EventDirect, 0.5)), ms(percentile(res.EventDirect, 0.99)), ms(percentile(res.EventProxy, 0.5)), ms(percentile(res.EventProxy, 0.99)))
	p.logf("record SSE TTFT          direct p50 %6.3f ms p99 %6.3f ms | proxy p50 %6.3f ms p99 %6.3f ms",
		ms(percentile(res.TTFTDirect, 0.5)), ms(percentile(res.TTFTDirect, 0.99)), ms(percentile(res.TTFTProxy, 0.5)), ms(percentile(res.TTFTProxy, 0.99)))
	return res, nil
}

// readStream sends the streamed request and reads the answer event by
// event: for each, the delay since the upstream wrote it (its id field);
// and the time to the first content event (the second: the first carries
// only the role).
func readStream(c *http.Client, base string, body []byte) (ttft time.Duration, delays []time.Duration, err error) {
	t0 := time.Now()
	resp, err := post(c, base, body, nil)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var id int64 = -1
	n := 0
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, io.EOF) && len(line) == 0 {
			break
		}
		if err != nil {
			return 0, nil, err
		}
		switch {
		case bytes.HasPrefix(line, []byte("id: ")):
			id, err = strconv.ParseInt(string(bytes.TrimSpace(line[4:])), 10, 64)
			if err != nil {
				return 0, nil, fmt.Errorf("event %d: id: %w", n, err)
			}
		case len(bytes.TrimSpace(line)) == 0:
			now := clock()
			if id < 0 {
				return 0, nil, fmt.Errorf("event %d without id", n)
			}
			delays = append(delays, time.Duration(now-id))
			if n == 1 {
				ttft = time.Since(t0)
			}
			id = -1
			n++
		}
	}
	if n != sseEvents {
		return 0, nil, fmt.Errorf("%d events, want %d", n, sseEvents)
	}
	return ttft, delays, nil
}

// fileSystem names the file system holding dir, from /proc/mounts.
func fileSystem(dir string) string {
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return dir
	}
	best, fstype := "", "?"
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		mp := f[1]
		if (dir == mp || strings.HasPrefix(dir, strings.TrimSuffix(mp, "/")+"/")) && len(mp) > len(best) {
			best, fstype = mp, f[2]
		}
	}
	return fmt.Sprintf("%s (%s)", fstype, filepath.Dir(dir))
}

// tmpfsDir is a fresh directory on a tmpfs, where fsync costs nothing, or
// "" when there is none.
func tmpfsDir() string {
	const shm = "/dev/shm"
	if !strings.HasPrefix(fileSystem(shm+"/x"), "tmpfs") {
		return ""
	}
	d, err := os.MkdirTemp(shm, "llmproxy-bench-")
	if err != nil {
		return ""
	}
	return d
}
