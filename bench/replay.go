package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
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
	// VsReplay is llmproxy's throughput over this server's in the same
	// case (the median of the per-round ratios).
	VsReplay float64
	// Mem is the server's memory after the case; zero when it runs in the
	// load generator's process.
	Mem memStatus
	// Note says how the server serves this case, when it differs from the
	// others (a stream written as one body).
	Note string
	// Failed, when set, says why the row has no figures: the server could
	// not start, or answered other bytes than the recorded ones.
	Failed string
}

// server is one thing the load generator can aim at.
type server struct {
	name   string
	base   string
	client func(conns int) *http.Client
	proc   *child // the server's process; nil in process
	warm   time.Duration
	// oneWrite: a stream is written as one body.
	oneWrite bool
}

// measure runs l against s, adding to t, with the server's CPU time and
// the load generator's.
func (s server) measure(l load, c *http.Client, t *tally) error {
	var before time.Duration
	if s.proc != nil {
		var err error
		if before, err = s.proc.cpu(); err != nil {
			return err
		}
	}
	g0 := selfCPU()
	l.run(c, s.base, t)
	t.genCPU += selfCPU() - g0
	if s.proc != nil {
		after, err := s.proc.cpu()
		if err != nil {
			return err
		}
		t.cpu += after - before
	}
	return nil
}

// The payloads of the replay cases.
const (
	payloadJSON = "2 KB JSON"
	payloadSSE  = "200-event SSE"
)

const (
	nameLimit     = "limit: bare net/http handler"
	nameReplay    = "llmproxy replay"
	nameVCR       = "go-vcr v4 behind net/http"
	nameVCRInProc = "go-vcr v4 RoundTripper, in process (no HTTP)"
)

// replayScenario measures replay throughput and latency against the limit,
// go-vcr and the peers, interleaving the servers round by round so that
// noise on the shared cores falls on all of them alike.
func replayScenario(p plan, dir string, ps peerSet) ([]replayRow, error) {
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

	servers := []server{
		{name: nameLimit, base: bare.URL, client: netClient, proc: bare, warm: p.warm},
		{name: nameReplay, base: replay.URL, client: netClient, proc: replay, warm: p.warm},
		{name: nameVCR, base: vcr.URL, client: netClient, proc: vcr, warm: p.warm, oneWrite: true},
		{name: nameVCRInProc, base: vcrBase, client: vcrClient, warm: p.warm, oneWrite: true},
	}
	// notRun is the peers that could not be installed or started, and why.
	var notRun []replayRow
	for _, pr := range peers {
		if why, ok := ps.skipped[pr.name]; ok {
			notRun = append(notRun, replayRow{Server: pr.name, Failed: "not run: " + why})
		}
	}
	for _, pr := range ps.run {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		pdir := filepath.Join(dir, peerKey(pr.name))
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			return nil, err
		}
		c, err := pr.start(ps.npm, pdir, port)
		if err != nil {
			notRun = append(notRun, replayRow{Server: pr.name, Failed: "did not start: " + err.Error()})
			p.logf("replay: %s did not start: %v", pr.name, err)
			continue
		}
		children = append(children, c)
		p.logf("replay: %s ready in %v (%s)", pr.name, c.Open.Round(time.Millisecond), c.URL)
		// A JIT compiler (WireMock's) or V8 gets a longer warm-up.
		servers = append(servers, server{name: pr.name, base: c.URL, client: netClient, proc: c, warm: 3 * p.warm, oneWrite: pr.oneWrite})
	}

	jsonBody, sseBody := jsonResponse(), bytes.Join(sseStream(), nil)
	var rows []replayRow
	for _, cs := range []struct {
		short, payload string
		stream         bool
		want           []byte
	}{
		{"json", payloadJSON, false, jsonBody},
		{"sse", payloadSSE, true, sseBody},
	} {
		if p.payloads != nil && !p.payloads[cs.short] {
			continue
		}
		body := requestBody(0, cs.stream)
		// Every server must answer with the very bytes before it is timed.
		var live []server
		var wrong []replayRow
		for _, s := range servers {
			if cs.stream && s.proc == nil {
				continue // the in-process go-vcr row is for scale, JSON only
			}
			if err := expect(s, body, cs.want); err != nil {
				if s.name == nameLimit || s.name == nameReplay {
					return nil, err
				}
				wrong = append(wrong, replayRow{Server: s.name, Failed: "answers other bytes: " + err.Error()})
				p.logf("replay %s: %v", cs.payload, err)
				continue
			}
			live = append(live, s)
		}
		for _, conns := range []int{1, 64} {
			l := load{conns: conns, max: p.maxRequests, body: func(int) []byte { return body }, want: same(cs.want)}
			tallies := make([]*tally, len(live))
			clients := make([]*http.Client, len(live))
			for k, s := range live {
				tallies[k], clients[k] = &tally{}, s.client(conns)
				warm := l
				warm.dur = s.warm
				warm.run(clients[k], s.base, &tally{})
			}
			for range p.rounds {
				for k, s := range live {
					l.dur = p.round
					if err := s.measure(l, clients[k], tallies[k]); err != nil {
						return nil, err
					}
				}
			}
			var replayTally *tally
			for k, s := range live {
				if s.name == nameReplay {
					replayTally = tallies[k]
				}
			}
			for k, s := range live {
				t := tallies[k]
				row := replayRow{Payload: cs.payload, Conns: conns, Server: s.name, t: t}
				if cs.stream && s.oneWrite {
					row.Note = "writes the stream as one body"
				}
				if t.errs > 0 {
					if s.name == nameLimit {
						return nil, fmt.Errorf("replay %s ×%d on %s: %d errors, first: %v", cs.payload, conns, s.name, t.errs, t.err)
					}
					row.Failed = fmt.Sprintf("%d of %d answers wrong or failed, first: %v", t.errs, t.errs+t.n, t.err)
					p.logf("replay %s ×%d on %s: %s", cs.payload, conns, s.name, row.Failed)
				}
				row.Ratio = t.roundRatio(tallies[0])
				row.VsReplay = replayTally.roundRatio(t)
				if s.proc != nil {
					if m, err := s.proc.mem(); err == nil {
						row.Mem = m
					}
				}
				rows = append(rows, row)
				p.logf("replay %-14s ×%-2d %-46s %8.0f req/s  p50 %6.3f ms  p99 %6.3f ms  %.2f× limit  llmproxy %.2f× this  server CPU %6.1f µs/req  load generator %6.1f µs/req  RSS %5.1f MB",
					cs.payload, conns, s.name, t.rps(), ms(t.pct(0.5)), ms(t.pct(0.99)), row.Ratio, row.VsReplay,
					float64(t.cpuPerRequest())/1e3, float64(t.genCPUPerRequest())/1e3, mb(row.Mem.RSS))
			}
			for _, r := range slices.Concat(wrong, notRun) {
				r.Payload, r.Conns = cs.payload, conns
				rows = append(rows, r)
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
	if err := check(status, got, want); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	return nil
}
