package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// scaleRow is one cassette size under one server.
type scaleRow struct {
	Server    string
	Size      int
	FileBytes int64
	// Build is writing the cassette: for llmproxy, `llmproxy import` of
	// its export (timed alone, the export written before); for go-vcr,
	// saving its YAML.
	Build time.Duration
	// ImportPeak is the peak RSS of the import process; 0 for go-vcr.
	ImportPeak   int64
	Open         time.Duration // opening it and building the handler, in the server
	Listening    time.Duration // from starting the process to accepting connections
	FirstServed  time.Duration // from starting the process to the first answer read
	t            *tally
	Ratio        float64   // throughput over the same server's at the smallest size
	Mem          memStatus // after the load
	OpenMem      memStatus // after the first answer
	Skipped      string
	firstRequest []byte
}

// scaleConns is the concurrency of the lookup-scaling load.
const scaleConns = 16

// startRuns is how many times each scale server is started to time its
// start.
func startRuns(p plan) int {
	if p.quick {
		return 1
	}
	return 5
}

// firstAnswer asks a fresh child for one answer and returns the time from
// its start to the answer read.
func firstAnswer(c *child, req, want []byte) (time.Duration, error) {
	status, body, err := fetch(newClient(1), c.URL, req)
	d := time.Since(c.Started)
	if err == nil {
		err = check(status, body, want)
	}
	return d, err
}

// median is the middle of ds (the upper middle for an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// scaleScenario measures lookup cost against cassette size. Each size is
// served by its own process, started fresh, so that memory and the time to
// the first answer belong to that size alone; the sizes are then loaded in
// interleaved rounds with requests for uniformly random recorded
// interactions.
func scaleScenario(p plan, dir, llmproxyBin string) ([]scaleRow, error) {
	var rows []scaleRow
	var children []*child
	defer func() {
		for _, c := range children {
			c.stop()
		}
	}()
	var vcrTemplate string
	for _, srv := range []string{nameReplay, nameVCR} {
		for _, n := range p.scaleSizes {
			row := scaleRow{Server: srv, Size: n}
			var o serveOptions
			switch srv {
			case nameReplay:
				path := filepath.Join(dir, fmt.Sprintf("scale-%d.cassette", n))
				d, peak, err := importScale(dir, llmproxyBin, path, n)
				if err != nil {
					return nil, err
				}
				row.Build, row.ImportPeak = d, peak
				o = serveOptions{kind: "replay", cassette: path, cpuprofile: p.profile("scale-" + strconv.Itoa(n))}
				if fi, err := os.Stat(path); err == nil {
					row.FileBytes = fi.Size()
				}
			case nameVCR:
				if n > p.vcrMaxSize {
					row.Skipped = fmt.Sprintf("not run: go-vcr scans its interactions linearly, so a request costs about %d× one at %d", n/p.scaleSizes[0], p.scaleSizes[0])
					rows = append(rows, row)
					continue
				}
				if vcrTemplate == "" {
					var err error
					if vcrTemplate, err = recordVCR(dir); err != nil {
						return nil, err
					}
				}
				t0 := time.Now()
				name, err := buildVCRCassette(dir, vcrTemplate, n)
				if err != nil {
					return nil, err
				}
				row.Build = time.Since(t0)
				o = serveOptions{kind: "vcr", cassette: name}
				if fi, err := os.Stat(name + ".yaml"); err == nil {
					row.FileBytes = fi.Size()
				}
			}
			// The process is started startRuns times, the last one kept for
			// the load; the start figures are the medians of the runs.
			row.firstRequest = requestBody(n-1, false)
			var opens, listens, firsts []time.Duration
			var c *child
			for run := range startRuns(p) {
				var err error
				if c, err = startChild(dir, o); err != nil {
					return nil, err
				}
				first, err := firstAnswer(c, row.firstRequest, scaleAnswer(n-1))
				if err != nil {
					c.stop()
					return nil, fmt.Errorf("%s of %d: first request: %w%s", srv, n, err, c.tail())
				}
				opens, listens, firsts = append(opens, c.Open), append(listens, c.Ready.Sub(c.Started)), append(firsts, first)
				if run < startRuns(p)-1 {
					c.stop()
				}
			}
			children = append(children, c)
			row.Open, row.Listening, row.FirstServed = median(opens), median(listens), median(firsts)
			var err error
			if row.OpenMem, err = c.mem(); err != nil {
				return nil, err
			}
			row.t = &tally{}
			rows = append(rows, row)
			p.logf("scale %-28s %7d interactions: built in %v, first answer %v after start", srv, n, row.Build.Round(time.Millisecond), row.FirstServed.Round(time.Millisecond))
		}
	}

	// The request order: uniformly random recorded interactions, the same
	// sequence for every size (reduced modulo the size).
	rng := rand.New(rand.NewPCG(1, 2))
	order := make([]int, p.maxRequests)
	for k := range order {
		order[k] = rng.IntN(1 << 30)
	}
	type live struct {
		row    *scaleRow
		client *http.Client
		srv    server
		load   load
	}
	var lives []live
	k := 0
	for i := range rows {
		r := &rows[i]
		if r.Skipped != "" {
			continue
		}
		n := r.Size
		lv := live{row: r, client: newClient(scaleConns), srv: server{name: r.Server, base: children[k].URL, proc: children[k]},
			load: load{conns: scaleConns, max: p.maxRequests,
				body: func(j int) []byte { return requestBody(order[j]%n, false) },
				want: func(j int) []byte { return scaleAnswer(order[j] % n) }}}
		k++
		warm := lv.load
		warm.dur = p.warm
		warm.run(lv.client, lv.srv.base, &tally{})
		lives = append(lives, lv)
	}
	for range p.rounds {
		for _, lv := range lives {
			l := lv.load
			l.dur = p.round
			if err := lv.srv.measure(l, lv.client, lv.row.t); err != nil {
				return nil, err
			}
		}
	}
	for k, lv := range lives {
		r := lv.row
		if r.t.errs > 0 {
			return nil, fmt.Errorf("%s of %d: %d errors, first: %v", r.Server, r.Size, r.t.errs, r.t.err)
		}
		m, err := children[k].mem()
		if err != nil {
			return nil, err
		}
		r.Mem = m
		lv.client.CloseIdleConnections()
	}
	for i := range rows {
		r := &rows[i]
		if r.t == nil {
			continue
		}
		for _, base := range rows {
			if base.Server == r.Server && base.t != nil {
				r.Ratio = r.t.roundRatio(base.t)
				break
			}
		}
		p.logf("scale %-28s %7d interactions: %8.0f req/s (%.2f× smallest)  p99 %6.3f ms  CPU %6.1f µs/req  RSS %5.1f MB (anon %5.1f MB, file-mapped %5.1f MB, peak %5.1f MB)",
			r.Server, r.Size, r.t.rps(), r.Ratio, ms(r.t.pct(0.99)), float64(r.t.cpuPerRequest())/1e3, mb(r.Mem.RSS), mb(r.Mem.Anon), mb(r.Mem.File), mb(r.Mem.HWM))
	}
	return rows, nil
}

// importScale builds the scale cassette of n interactions the way a user
// would from an export: the bench writes the export in a child process (so
// that its memory never counts against the load generator), then `llmproxy
// import` reads it into path. It returns how long the import took and the
// import's peak RSS.
func importScale(dir, bin, path string, n int) (time.Duration, int64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	export := filepath.Join(dir, fmt.Sprintf("scale-%d.json", n))
	defer os.Remove(export)
	if out, err := exec.Command(exe, "-build", strconv.Itoa(n), "-export", export).CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("export of %d: %v: %s", n, err, out)
	}
	cmd := exec.Command(bin, "import", "--in", export, "--cassette", path)
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(t0)
	if err != nil {
		return 0, 0, fmt.Errorf("llmproxy import of %d: %v: %s", n, err, out)
	}
	var peak int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		peak = ru.Maxrss << 10 // kilobytes on Linux
	}
	return d, peak, nil
}

// buildLLMProxy builds the llmproxy command from the module the bench
// replaces it with (the repository it sits in) into dir.
func buildLLMProxy(dir string) (string, error) {
	root, err := moduleDir("github.com/llmproxy/llmproxy")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "llmproxy")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/llmproxy")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/llmproxy in %s: %v: %s", root, err, out)
	}
	return bin, nil
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }
