package main

import (
	"bytes"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"gopkg.in/dnaeon/go-vcr.v4/pkg/recorder"
)

// replayRow is one server in one replay case.
type replayRow struct {
	Payload string // "2 KB JSON" or "200-event SSE"
	Conns   int
	Server  string
	t       *tally
	Ratio   float64 // throughput over the limit's in the same case
}

// server is one thing the load generator can aim at.
type server struct {
	name   string
	base   string
	client func(conns int) *http.Client
	proc   *child // the server's process; nil in process
}

// measure runs l against s, adding to t, with the server's CPU time.
func (s server) measure(l load, c *http.Client, t *tally) error {
	var before time.Duration
	if s.proc != nil {
		var err error
		if before, err = s.proc.cpu(); err != nil {
			return err
		}
	}
	l.run(c, s.base, t)
	if s.proc != nil {
		after, err := s.proc.cpu()
		if err != nil {
			return err
		}
		t.cpu += after - before
	}
	return nil
}

const (
	nameLimit     = "limit: bare net/http handler"
	nameReplay    = "llmproxy replay"
	nameVCR       = "go-vcr v4 behind net/http"
	nameVCRInProc = "go-vcr v4 RoundTripper, in process (no HTTP)"
)

// replayScenario measures replay throughput and latency against the limit
// and go-vcr, interleaving the servers round by round so that noise on the
// shared cores falls on all of them alike.
func replayScenario(p plan, dir string) ([]replayRow, error) {
	path := filepath.Join(dir, "replay.cassette")
	if err := buildReplayCassette(path); err != nil {
		return nil, err
	}
	vcrName, err := recordVCR(dir)
	if err != nil {
		return nil, err
	}
	var children []*child
	defer func() {
		for _, c := range children {
			c.stop()
		}
	}()
	start := func(o serveOptions) (*child, error) {
		c, err := startChild(dir, o)
		if err != nil {
			return nil, err
		}
		children = append(children, c)
		return c, nil
	}
	bare, err := start(serveOptions{kind: "bare", cpuprofile: p.profile("bare")})
	if err != nil {
		return nil, err
	}
	replay, err := start(serveOptions{kind: "replay", cassette: path, cpuprofile: p.profile("replay")})
	if err != nil {
		return nil, err
	}
	vcr, err := start(serveOptions{kind: "vcr", cassette: vcrName})
	if err != nil {
		return nil, err
	}
	inproc, err := recorder.New(vcrName, recorder.WithMode(recorder.ModeReplayOnly),
		recorder.WithReplayableInteractions(true), recorder.WithSkipRequestLatency(true), recorder.WithRealTransport(refuse{}))
	if err != nil {
		return nil, err
	}
	netClient := newClient
	vcrClient := func(int) *http.Client { return &http.Client{Transport: inproc} }

	jsonBody, sseBody := jsonResponse(), bytes.Join(sseStream(), nil)
	jsonServers := []server{
		{nameLimit, bare.URL, netClient, bare},
		{nameReplay, replay.URL, netClient, replay},
		{nameVCR, vcr.URL, netClient, vcr},
		{nameVCRInProc, vcrBase, vcrClient, nil},
	}
	sseServers := jsonServers[:2]
	// Every server must answer with the very bytes before it is timed.
	for _, s := range jsonServers {
		if err := expect(s, requestBody(0, false), jsonBody); err != nil {
			return nil, err
		}
	}
	for _, s := range sseServers {
		if err := expect(s, requestBody(0, true), sseBody); err != nil {
			return nil, err
		}
	}

	var rows []replayRow
	for _, cs := range []struct {
		short, payload string
		stream         bool
		servers        []server
		size           int
	}{
		{"json", "2 KB JSON", false, jsonServers, len(jsonBody)},
		{"sse", "200-event SSE", true, sseServers, len(sseBody)},
	} {
		if p.payloads != nil && !p.payloads[cs.short] {
			continue
		}
		body := requestBody(0, cs.stream)
		for _, conns := range []int{1, 64} {
			l := load{conns: conns, max: p.maxRequests, body: func(int) []byte { return body }, size: int64(cs.size)}
			tallies := make([]*tally, len(cs.servers))
			clients := make([]*http.Client, len(cs.servers))
			for k, s := range cs.servers {
				tallies[k], clients[k] = &tally{}, s.client(conns)
				warm := l
				warm.dur = p.warm
				warm.run(clients[k], s.base, &tally{})
			}
			for range p.rounds {
				for k, s := range cs.servers {
					l.dur = p.round
					if err := s.measure(l, clients[k], tallies[k]); err != nil {
						return nil, err
					}
				}
			}
			for k, s := range cs.servers {
				t := tallies[k]
				if t.errs > 0 {
					return nil, fmt.Errorf("replay %s ×%d on %s: %d errors, first: %v", cs.payload, conns, s.name, t.errs, t.err)
				}
				row := replayRow{Payload: cs.payload, Conns: conns, Server: s.name, t: t, Ratio: t.roundRatio(tallies[0])}
				rows = append(rows, row)
				p.logf("replay %-14s ×%-2d %-46s %8.0f req/s  p50 %6.3f ms  p99 %6.3f ms  %.2f× limit  server CPU %6.1f µs/req",
					cs.payload, conns, s.name, t.rps(), ms(t.pct(0.5)), ms(t.pct(0.99)), row.Ratio, float64(t.cpuPerRequest())/1e3)
			}
			for _, c := range clients {
				c.CloseIdleConnections()
			}
		}
	}
	return rows, nil
}

// expect checks that a server answers body with want, byte for byte.
func expect(s server, body, want []byte) error {
	status, got, err := fetch(s.client(1), s.base, body)
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	if status != http.StatusOK || !bytes.Equal(got, want) {
		return fmt.Errorf("%s: status %d and %d bytes, want 200 and the %d recorded bytes: %.200s", s.name, status, len(got), len(want), got)
	}
	return nil
}
