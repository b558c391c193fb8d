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
	// alt, when set, is the other answer the server may give besides the
	// recorded one (the fault it injects): see load.alt.
	alt func(status int, got []byte) error
	// adjust, when set, makes a case's load this server's own (the
	// answers it must give, when they are its own bytes).
	adjust func(load) load
}

// loadFor is l as s runs it.
func (s server) loadFor(l load) load {
	if s.adjust != nil {
		return s.adjust(l)
	}
	return l
}

// pause and resume stop and continue the server's process, if it has one.
func (s server) pause() {
	if s.proc != nil {
		s.proc.pause()
	}
}

func (s server) resume() {
	if s.proc != nil {
		s.proc.resume()
	}
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
	l.alt = s.alt
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
	// nameReplayFault is llmproxy replay injecting faultSpec, in the JSON
	// cases only.
	nameReplayFault = "llmproxy replay --fault " + faultSpec
	faultSpec       = "429@rate=0.1"
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
	var faulted *server
	if p.payloads == nil || p.payloads["json"] {
		fc, err := start(serveOptions{kind: "replay", cassette: path, fault: faultSpec, cpuprofile: p.profile("replay-fault")})
		if err != nil {
			return nil, err
		}
		faulted = &server{name: nameReplayFault, base: fc.URL, client: newClient, proc: fc, warm: p.warm, alt: openAI429}
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
	vcrClient := func(int) *http.Client { return &http.Client{Transport: inproc} }
	servers := []server{
		{name: nameLimit, base: bare.URL, client: newClient, proc: bare, warm: p.warm},
		{name: nameReplay, base: replay.URL, client: newClient, proc: replay, warm: p.warm},
		{name: nameVCR, base: vcr.URL, client: newClient, proc: vcr, warm: p.warm, oneWrite: true},
		{name: nameVCRInProc, base: vcrBase, client: vcrClient, warm: p.warm, oneWrite: true},
	}
	started, notRun := startPeers(p, dir, ps)
	for _, s := range started {
		children = append(children, s.proc)
	}
	servers = append(servers, started...)

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
		caseServers := servers
		if !cs.stream && faulted != nil {
			// Beside plain replay, so that the two run one after the other.
			caseServers = slices.Insert(slices.Clone(servers), 2, *faulted)
		}
		live, wrong, err := answering(p, caseServers, body, cs.want, cs.stream)
		if err != nil {
			return nil, err
		}
		for _, conns := range []int{1, 64} {
			l := load{conns: conns, max: p.maxRequests, body: func(int) []byte { return body }, want: same(cs.want)}
			got, err := replayCase(p, live, l, cs.payload, cs.stream, nameReplay)
			if err != nil {
				return nil, err
			}
			rows = append(rows, got...)
			for _, r := range slices.Concat(wrong, notRun) {
				r.Payload, r.Conns = cs.payload, conns
				rows = append(rows, r)
			}
		}
	}
	return rows, nil
}

// answering is the servers that answer body with want, byte for byte,
// checked before they are timed, and a row for each that does not. The
// limit or llmproxy answering otherwise is an error. The in-process go-vcr
// row takes no part in the stream.
func answering(p plan, servers []server, body, want []byte, stream bool) (live []server, wrong []replayRow, err error) {
	for _, s := range servers {
		if stream && s.proc == nil {
			continue
		}
		if err := expect(s, body, want); err != nil {
			if s.name == nameLimit || s.name == nameReplay {
				return nil, nil, err
			}
			wrong = append(wrong, replayRow{Server: s.name, Failed: "answers other bytes: " + err.Error()})
			p.logf("replay: %v", err)
			continue
		}
		live = append(live, s)
	}
	return live, wrong, nil
}

// startPeers starts the installed peers, each on its own loopback port
// with its files in its own directory under dir, and returns them with a
// row for each peer that was not installed or did not start.
func startPeers(p plan, dir string, ps peerSet) (started []server, notRun []replayRow) {
	for _, pr := range peers {
		if why, ok := ps.skipped[pr.name]; ok {
			notRun = append(notRun, replayRow{Server: pr.name, Failed: "not run: " + why})
			p.logf("replay: %s not run: %s", pr.name, why)
		}
	}
	for _, pr := range ps.run {
		c, err := func() (*child, error) {
			port, err := freePort()
			if err != nil {
				return nil, err
			}
			pdir := filepath.Join(dir, peerKey(pr.name))
			if err := os.MkdirAll(pdir, 0o755); err != nil {
				return nil, err
			}
			return pr.start(ps.npm, pdir, port)
		}()
		if err != nil {
			notRun = append(notRun, replayRow{Server: pr.name, Failed: "did not start: " + err.Error()})
			p.logf("replay: %s did not start: %v", pr.name, err)
			continue
		}
		p.logf("replay: %s ready in %v (%s)", pr.name, c.Open.Round(time.Millisecond), c.URL)
		started = append(started, server{name: pr.name, base: c.URL, client: newClient, proc: c,
			warm: time.Duration(pr.warm) * p.warm, oneWrite: pr.oneWrite})
	}
	return started, notRun
}

// replayCase runs one case (payload and connections): a warm-up per
// server, then p.rounds rounds of l in which every server takes its turn.
// servers[0] is the limit, and the server named subject (llmproxy) is among
// them: each row's VsReplay is subject's throughput over that row's.
func replayCase(p plan, servers []server, l load, payload string, stream bool, subject string) ([]replayRow, error) {
	tallies := make([]*tally, len(servers))
	clients := make([]*http.Client, len(servers))
	defer func() {
		for _, c := range clients {
			c.CloseIdleConnections()
		}
	}()
	// Each server runs alone in its turn: the others' processes are
	// stopped until theirs.
	for _, s := range servers {
		s.pause()
	}
	defer func() {
		for _, s := range servers {
			s.resume()
		}
	}()
	for k, s := range servers {
		tallies[k], clients[k] = &tally{}, s.client(l.conns)
		warm := s.loadFor(l)
		warm.dur = s.warm
		warm.alt = s.alt
		s.resume()
		warm.run(clients[k], s.base, &tally{})
		s.pause()
	}
	l.dur = p.round
	for range p.rounds {
		for k, s := range servers {
			s.resume()
			err := s.measure(s.loadFor(l), clients[k], tallies[k])
			s.pause()
			if err != nil {
				return nil, err
			}
		}
	}
	at := slices.IndexFunc(servers, func(s server) bool { return s.name == subject })
	if at < 0 {
		return nil, fmt.Errorf("%s ×%d: no server %q among those measured", payload, l.conns, subject)
	}
	replayTally := tallies[at]
	var rows []replayRow
	for k, s := range servers {
		t := tallies[k]
		row := replayRow{Payload: payload, Conns: l.conns, Server: s.name, t: t, Ratio: t.roundRatio(tallies[0]), VsReplay: replayTally.roundRatio(t)}
		if stream && s.oneWrite {
			row.Note = "writes the stream as one body"
		}
		if s.alt != nil && t.n > 0 {
			row.Note = fmt.Sprintf("%d of %d answers were the injected 429: %.3f", t.alt, t.n, float64(t.alt)/float64(t.n))
		}
		if s.alt != nil {
			p.logf("%s ×%d on %s: %s", payload, l.conns, s.name, row.Note)
		}
		if t.errs > 0 {
			if k == 0 {
				return nil, fmt.Errorf("%s ×%d on %s: %d errors, first: %v", payload, l.conns, s.name, t.errs, t.err)
			}
			row.Failed = fmt.Sprintf("%d of %d answers wrong or failed, first: %v", t.errs, t.errs+t.n, t.err)
			p.logf("%s ×%d on %s: %s", payload, l.conns, s.name, row.Failed)
		}
		if s.proc != nil {
			if m, err := s.proc.mem(); err == nil {
				row.Mem = m
			}
		}
		rows = append(rows, row)
		p.logf("%-20s ×%-2d %-46s %8.0f req/s  p50 %6.3f ms  p99 %6.3f ms  %.2f× limit  llmproxy %.2f× this  server CPU %6.1f µs/req  load generator %6.1f µs/req  RSS %5.1f MB",
			payload, l.conns, s.name, t.rps(), ms(t.pct(0.5)), ms(t.pct(0.99)), row.Ratio, row.VsReplay,
			float64(t.cpuPerRequest())/1e3, float64(t.genCPUPerRequest())/1e3, mb(row.Mem.RSS))
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
		if s.alt != nil && s.alt(status, got) == nil {
			return nil
		}
		return fmt.Errorf("%s: %w", s.name, err)
	}
	return nil
}
