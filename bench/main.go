// Command bench measures llmproxy against the limit and its peers and
// writes docs/performance.md and docs/performance.svg.
//
//	cd bench && go run . [-quick]
//
// Every server under test runs in a child process (this binary re-executed
// with -serve), on loopback; the load generator, the fake upstream of the
// record scenario and the go-vcr in-process peer run in the parent. Speed is
// reported as ratios against a baseline measured in the same run, with the
// servers of a case interleaved round by round.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// plan is how long and how hard each scenario runs.
type plan struct {
	quick       bool
	warm, round time.Duration // per server and case: one warm-up, then rounds of round
	rounds      int
	maxRequests int // bound on the requests of one run
	scaleSizes  []int
	vcrMaxSize  int // largest go-vcr cassette in the scale scenario
	// record scenario
	recordRequests, recordStreams int
	gap                           time.Duration
	profileDir                    string
	verbose                       bool
	// payloads limits the replay scenario to some payloads ("json", "sse"),
	// for profiling one; nil runs both.
	payloads map[string]bool
	// peers is the npm peers to run in the replay scenario, by peerKey.
	peers map[string]bool
}

func (p plan) logf(format string, args ...any) {
	if p.verbose {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
}

// profile is the CPU profile file for a server child, "" when not profiling.
func (p plan) profile(name string) string {
	if p.profileDir == "" {
		return ""
	}
	return filepath.Join(p.profileDir, name+".pprof")
}

func fullPlan() plan {
	return plan{
		warm: 300 * time.Millisecond, round: 400 * time.Millisecond, rounds: 8, maxRequests: 1_000_000,
		scaleSizes: []int{10, 1_000, 10_000, 100_000}, vcrMaxSize: 1_000,
		recordRequests: 2000, recordStreams: 20, gap: 500 * time.Microsecond,
		verbose: true,
	}
}

func quickPlan() plan {
	return plan{
		quick: true,
		warm:  100 * time.Millisecond, round: 150 * time.Millisecond, rounds: 4, maxRequests: 1_000_000,
		scaleSizes: []int{10, 1_000, 10_000}, vcrMaxSize: 1_000,
		recordRequests: 300, recordStreams: 4, gap: 500 * time.Microsecond,
		verbose: true,
	}
}

func main() {
	quick := flag.Bool("quick", false, "shorter runs (under a minute) for a smoke test")
	out := flag.String("out", filepath.Join("..", "docs"), "`dir`ectory for performance.md and performance.svg")
	only := flag.String("only", "", "comma-separated scenarios to run (replay, replay-json, replay-sse, scale, record, mock, newpaths); the report is written only when all run")
	profileDir := flag.String("profile", "", "write a CPU profile of each llmproxy server child into `dir`")
	peerList := flag.String("peers", "aimock,mountebank,wiremock", "comma-separated npm `peers` of the replay scenario (aimock, mountebank, wiremock); \"none\" for none")
	// The flags below are for the child processes the bench starts.
	serve := flag.String("serve", "", "run as a server child of this `kind` (bare, replay, record, vcr, mock, mock-bare)")
	build := flag.Int("build", 0, "write the export of a scale cassette of `n` interactions to -export and exit")
	exportPath := flag.String("export", "", "export `file` written by -build")
	cassettePath := flag.String("cassette", "", "cassette `path` of a child")
	upstreamURL := flag.String("upstream", "", "upstream `URL` of a record child")
	cpuprofile := flag.String("cpuprofile", "", "CPU profile `file` of a server child")
	fault := flag.String("fault", "", "`fault` spec a replay child injects, as llmproxy's --fault (seed 1)")
	servePath := flag.String("path", "", "URL `path` a child serves every request at (the ConverseStream children)")
	flag.Parse()

	switch {
	case *serve != "":
		if err := serveChild(serveOptions{kind: *serve, cassette: *cassettePath, upstream: *upstreamURL, cpuprofile: *cpuprofile, fault: *fault, path: *servePath}); err != nil {
			fmt.Fprintln(os.Stderr, "bench child:", err)
			os.Exit(1)
		}
		return
	case *build > 0:
		t0 := time.Now()
		if err := writeScaleExport(*exportPath, *build); err != nil {
			fmt.Fprintln(os.Stderr, "bench build:", err)
			os.Exit(1)
		}
		fmt.Printf("built %.3f\n", float64(time.Since(t0).Microseconds())/1000)
		return
	}

	p := fullPlan()
	if *quick {
		p = quickPlan()
	}
	p.profileDir = *profileDir
	if *peerList != "none" {
		p.peers = map[string]bool{}
		for _, s := range strings.Split(*peerList, ",") {
			p.peers[strings.TrimSpace(s)] = true
		}
	}
	if err := run(p, *out, *only); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(p plan, out, only string) error {
	want := map[string]bool{"replay": true, "scale": true, "record": true, "mock": true, "newpaths": true}
	if only != "" {
		want = map[string]bool{}
		for _, s := range strings.Split(only, ",") {
			s = strings.TrimSpace(s)
			if payload, ok := strings.CutPrefix(s, "replay-"); ok {
				if p.payloads == nil {
					p.payloads = map[string]bool{}
				}
				p.payloads[payload] = true
				s = "replay"
			}
			want[s] = true
		}
	}
	dir, err := os.MkdirTemp("", "llmproxy-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if p.profileDir != "" {
		if err := os.MkdirAll(p.profileDir, 0o755); err != nil {
			return err
		}
	}
	rep := &report{plan: p, started: time.Now()}
	if want["replay"] {
		rep.peers = installPeers(p, p.peers)
		if rep.replay, err = replayScenario(p, dir, rep.peers); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
	}
	if want["scale"] {
		bin, err := buildLLMProxy(dir)
		if err != nil {
			return fmt.Errorf("scale: %w", err)
		}
		if rep.scale, err = scaleScenario(p, dir, bin); err != nil {
			return fmt.Errorf("scale: %w", err)
		}
	}
	if want["record"] {
		// Once with the cassette on the temporary directory's disk, as a
		// user records; once on a tmpfs, where fsync is free, to tell the
		// proxy's own cost from the disk's.
		res, err := recordScenario(p, dir, "record")
		if err != nil {
			return fmt.Errorf("record: %w", err)
		}
		rep.record = append(rep.record, res)
		if shm := tmpfsDir(); shm != "" {
			res, err := recordScenario(p, shm, "record-tmpfs")
			os.RemoveAll(shm)
			if err != nil {
				return fmt.Errorf("record on tmpfs: %w", err)
			}
			rep.record = append(rep.record, res)
		}
	}
	if want["mock"] {
		ps := installPeers(p, map[string]bool{"aimock": p.peers["aimock"]})
		if rep.mock, err = mockScenario(p, dir, ps); err != nil {
			return fmt.Errorf("mock: %w", err)
		}
	}
	if want["newpaths"] {
		if rep.newPaths, err = newPathsScenario(p, dir); err != nil {
			return fmt.Errorf("newpaths: %w", err)
		}
	}
	rep.elapsed = time.Since(rep.started)
	p.logf("done in %v", rep.elapsed.Round(time.Second))
	for _, t := range rep.targets() {
		if !t.skipped {
			p.logf("target: %s: %s, met %v", t.what, t.measured, t.met)
		}
	}
	if !want["replay"] || !want["scale"] || !want["record"] || !want["mock"] || !want["newpaths"] {
		return nil
	}
	return rep.write(out)
}
