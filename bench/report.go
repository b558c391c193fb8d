package main

import (
	_ "embed"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// findings is the hand-written part of the report: what the profiles
// showed and what was done about it.
//
//go:embed findings.md
var findings string

// report is everything one run measured.
type report struct {
	plan    plan
	started time.Time
	elapsed time.Duration
	replay  []replayRow
	peers   peerSet
	scale   []scaleRow
	record  []*recordResult // the first on the temporary directory's disk
	mock    []replayRow
	// newPaths is the newpaths scenario (newpaths.go); nil when not run.
	newPaths *newPaths
}

// write renders performance.md and performance.svg into dir.
func (r *report) write(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "performance.svg"), []byte(r.svg()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "performance.md"), []byte(r.markdown()), 0o644)
}

// target is one performance target and whether this run met it.
type target struct {
	what, measured string
	met            bool
	skipped        bool // not measured in this run
}

// faultTarget is issue 28's performance target for faults on demand.
const faultTarget = "replay 2 KB JSON with --fault " + faultSpec + ", 64 connections: ≥ 0.8× the bare handler"

func (r *report) targets() []target {
	var ts []target
	notRun := func(what string) {
		ts = append(ts, target{what: what, measured: "not run", skipped: true})
	}
	ratio := func(what string, payload string, conns int, min float64) {
		row := r.replayRow(payload, conns, nameReplay)
		if row == nil {
			notRun(what)
			return
		}
		ts = append(ts, target{what: what, measured: fmt.Sprintf("%.2f×", row.Ratio), met: row.Ratio >= min})
	}
	ratio("replay 2 KB JSON, 1 connection: ≥ 0.9× the bare handler's throughput", payloadJSON, 1, 0.9)
	ratio("replay 2 KB JSON, 64 connections: ≥ 0.8× the bare handler's throughput", payloadJSON, 64, 0.8)
	if row := r.replayRow(payloadJSON, 64, nameReplayFault); row == nil {
		notRun(faultTarget)
	} else if row.t == nil {
		ts = append(ts, target{what: faultTarget, measured: row.Failed})
	} else {
		plain := "plain replay not run"
		if rp := r.replayRow(payloadJSON, 64, nameReplay); rp != nil && rp.t != nil {
			plain = fmt.Sprintf("plain replay %.2f× in the same run", rp.Ratio)
		}
		ts = append(ts, target{what: faultTarget, measured: fmt.Sprintf("%.2f× (%s; %s)", row.Ratio, plain, row.Note), met: row.Failed == "" && row.Ratio >= 0.8})
	}
	ratio("replay 200-event SSE, 1 connection: ≥ 0.85× the bare handler's throughput", payloadSSE, 1, 0.85)
	ratio("replay 200-event SSE, 64 connections: ≥ 0.85× the bare handler's throughput", payloadSSE, 64, 0.85)
	for _, conns := range []int{1, 64} {
		what := fmt.Sprintf("server CPU per replayed 2 KB JSON request, %d connection(s): ≤ 1.3× the bare handler's", conns)
		rp, bare := r.replayRow(payloadJSON, conns, nameReplay), r.replayRow(payloadJSON, conns, nameLimit)
		if rp == nil || bare == nil || bare.t.cpuPerRequest() == 0 {
			notRun(what)
			continue
		}
		x := float64(rp.t.cpuPerRequest()) / float64(bare.t.cpuPerRequest())
		ts = append(ts, target{what: what, measured: fmt.Sprintf("%.2f× (%.0f vs %.0f ms per 1 000)", x, perThousand(rp.t.cpuPerRequest()), perThousand(bare.t.cpuPerRequest())), met: x <= 1.3})
	}
	if rp, bare := r.replayRow(payloadJSON, 64, nameReplay), r.replayRow(payloadJSON, 64, nameLimit); rp != nil && bare != nil {
		x := float64(rp.t.pct(0.99)) / float64(bare.t.pct(0.99))
		ts = append(ts, target{what: "replay 2 KB JSON, 64 connections: p99 ≤ 1.5× the bare handler's",
			measured: fmt.Sprintf("%.2f× (%.1f vs %.1f ms)", x, ms(rp.t.pct(0.99)), ms(bare.t.pct(0.99))), met: x <= 1.5})
	} else {
		notRun("replay 2 KB JSON, 64 connections: p99 ≤ 1.5× the bare handler's")
	}
	for _, name := range []string{nameAimock, nameMountebank} {
		what := fmt.Sprintf("64 connections, 2 KB JSON: ≥ 2.5× %s's throughput, same run", strings.Fields(name)[0])
		row := r.replayRow(payloadJSON, 64, name)
		switch {
		case row == nil:
			notRun(what)
		case row.Failed != "":
			ts = append(ts, target{what: what, measured: row.Failed, skipped: true})
		default:
			ts = append(ts, target{what: what, measured: fmt.Sprintf("%.2f×", row.VsReplay), met: row.VsReplay >= 2.5})
		}
	}
	for _, payload := range mockPayloads {
		for _, conns := range []int{1, 64} {
			what := fmt.Sprintf("mock, %s, %d connection(s): ≥ 0.85× the bare handler serving its bytes", payload, conns)
			if row := r.mockRow(payload, conns, nameMockBare); row == nil || row.t == nil {
				notRun(what)
			} else {
				ts = append(ts, target{what: what, measured: fmt.Sprintf("%.2f×", row.VsReplay), met: row.VsReplay >= 0.85})
			}
			ts = append(ts, r.mockPeerTarget(payload, conns, nameAimock))
		}
	}
	const (
		bigRate   = "100 000 interactions: ≥ 0.9× the throughput of 10"
		bigRSS    = "100 000 interactions: ≤ 100 MB RSS (VmRSS after the load)"
		bigPeak   = "100 000 interactions: ≤ 150 MB peak RSS (VmHWM, open and load)"
		bigListen = "100 000 interactions: listening within 200 ms (process start → first answer read)"
		bigImport = "import of 100 000 interactions (`llmproxy import` of their export): ≤ 3 s"
	)
	if big := r.scaleRow(nameReplay, 100_000); big == nil || big.t == nil {
		for _, what := range []string{bigRate, bigRSS, bigPeak, bigListen, bigImport} {
			ts = append(ts, target{what: what, measured: "not run (-quick stops at 10 000)", skipped: true})
		}
	} else {
		ts = append(ts,
			target{what: bigRate, measured: fmt.Sprintf("%.2f×", big.Ratio), met: big.Ratio >= 0.9},
			target{what: bigRSS, measured: fmt.Sprintf("%.1f MB", mb(big.Mem.RSS)), met: big.Mem.RSS <= 100<<20},
			target{what: bigPeak, measured: fmt.Sprintf("%.1f MB", mb(big.Mem.HWM)), met: big.Mem.HWM <= 150<<20},
			target{what: bigListen, measured: fmt.Sprintf("%s (accepting connections after %s)", dur(big.FirstServed), dur(big.Listening)),
				met: big.FirstServed <= 200*time.Millisecond},
			target{what: bigImport, measured: fmt.Sprintf("%s (peak RSS %.0f MB)", dur(big.Build), mb(big.ImportPeak)), met: big.Build <= 3*time.Second},
		)
	}
	if len(r.record) > 0 {
		rec := r.record[0]
		added := rec.JSONProxy.pct(0.5) - rec.JSONDirect.pct(0.5)
		measured := fmt.Sprintf("%+.3f ms (cassette on %s)", ms(added), rec.Where)
		for _, other := range r.record[1:] {
			measured += fmt.Sprintf("; %+.3f ms on %s", ms(other.JSONProxy.pct(0.5)-other.JSONDirect.pct(0.5)), other.Where)
		}
		ts = append(ts, target{
			what:     "record, 2 KB JSON: ≤ 1 ms added at p50",
			measured: measured,
			met:      added <= time.Millisecond,
		})
		p99 := percentile(rec.EventProxy, 0.99)
		ts = append(ts, target{
			what:     "record, SSE: ≤ 1 ms p99 per event (upstream write → client read, through the proxy)",
			measured: fmt.Sprintf("%.3f ms (direct: %.3f ms)", ms(p99), ms(percentile(rec.EventDirect, 0.99))),
			met:      p99 <= time.Millisecond,
		})
	} else {
		notRun("record, 2 KB JSON: ≤ 1 ms added at p50")
		notRun("record, SSE: ≤ 1 ms p99 per event")
	}
	return append(ts, r.newPaths.targets()...)
}

// replayRow is the row of a server in a replay case, nil when not run.
func (r *report) replayRow(payload string, conns int, server string) *replayRow {
	for i := range r.replay {
		if row := &r.replay[i]; row.Payload == payload && row.Conns == conns && row.Server == server {
			if row.t == nil && row.Failed == "" {
				return nil
			}
			return row
		}
	}
	return nil
}

// mockPeerTarget is the target of mock against a peer in a mock case: more
// answers per second, same run.
func (r *report) mockPeerTarget(payload string, conns int, peer string) target {
	what := fmt.Sprintf("mock, %s, %d connection(s): ahead of %s (> 1×), same run", payload, conns, strings.Fields(peer)[0])
	switch row := r.mockRow(payload, conns, peer); {
	case row == nil:
		return target{what: what, measured: "not run", skipped: true}
	case row.t == nil || row.Failed != "":
		return target{what: what, measured: row.Failed, skipped: true}
	default:
		return target{what: what, measured: fmt.Sprintf("%.2f×", row.VsReplay), met: row.VsReplay > 1}
	}
}

// mockRow is the row of a server in a mock case, nil when not run.
func (r *report) mockRow(payload string, conns int, server string) *replayRow {
	for i := range r.mock {
		if row := &r.mock[i]; row.Payload == payload && row.Conns == conns && row.Server == server {
			return row
		}
	}
	return nil
}

// perThousand is a per-request CPU time as milliseconds per 1 000 requests.
func perThousand(d time.Duration) float64 { return ms(d) * 1000 }

func (r *report) scaleRow(server string, n int) *scaleRow {
	for i := range r.scale {
		if r.scale[i].Server == server && r.scale[i].Size == n {
			return &r.scale[i]
		}
	}
	return nil
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func (r *report) markdown() string {
	var b strings.Builder
	p := r.plan
	mode := "full"
	if p.quick {
		mode = "quick (-quick: short runs, noisier)"
	}
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Performance\n\n")
	w("Generated by the benchmark suite in `bench/` (`cd bench && go run .`); do not edit by hand. The Findings\n")
	w("section at the end comes from `bench/findings.md`.\n\n")
	w("| run | |\n|---|---|\n")
	w("| date | %s |\n", r.started.UTC().Format("2006-01-02 15:04 MST"))
	w("| mode | %s, %d rounds of %v per server and case, took %v |\n", mode, p.rounds, p.round, r.elapsed.Round(time.Second))
	w("| machine | %s/%s, %d CPUs (%s), %s |\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(), runtime.Version())
	w("\n## Running it\n\n")
	w("```sh\n")
	w("cd bench && go run .            # every scenario (about 8 minutes); rewrites docs/performance.md and docs/performance.svg\n")
	w("cd bench && go run . -quick     # the same in about four minutes, noisier, scale up to 10 000\n")
	w("cd bench && go run . -quick -only replay-json -peers aimock   # one case, one peer (no report written)\n")
	w("cd bench && go run . -profile /tmp/prof -only replay   # CPU profiles of the llmproxy server processes\n")
	w("cd bench && go run . -quick -only mock   # llmproxy mock against a bare handler and aimock (no report written)\n")
	w("cd bench && go run . -quick -only newpaths -peers none   # the paths of issues 24–28, their targets (no report written)\n")
	w("cd bench && go vet ./... && go build ./...\n")
	w("go test -run XXX -bench . -benchmem ./match/ ./wire/ ./store/   # micro-benchmarks, from the repository root\n")
	w("```\n\n")
	w("`bench/` is its own Go module (go-vcr never enters the product's go.mod), so CI's `go test ./...` does not run it.\n\n")

	w("## Targets\n\n| target | this run | met |\n|---|---|---|\n")
	for _, t := range r.targets() {
		met := yes(t.met)
		if t.skipped {
			met = "—"
		}
		w("| %s | %s | %s |\n", t.what, t.measured, met)
	}

	w("\n## Replay throughput and latency\n\n")
	w("Closed loop: each connection sends its next request as soon as it has read the whole previous answer, and\n")
	w("the load generator compares every answer with the recorded bytes: an answer that differs counts as an\n")
	w("error, not as a served request, and a server whose first answer differs is reported and not timed. The\n")
	w("bare handler is the least a `net/http` handler can do to serve the same bytes: it reads the request into a\n")
	w("pooled buffer, copies the slices of a header map built once (Content-Length included for JSON) into the\n")
	w("response's, and writes a JSON answer in one Write (no explicit flush: net/http ends the response); for SSE it\n")
	w("writes the same 200 events with a Write and a flush each, as replay does. *llmproxy ÷ this* is llmproxy's\n")
	w("throughput over that server's (the median of the per-round ratios), the figure the peer targets use.\n")
	w("*%s* (JSON only) is replay started with that fault (seed 1): for it alone the check also accepts\n", nameReplayFault)
	w("status 429 with a body that is OpenAI's error object and nothing else, counted as served; its row says how many came back.\n")
	w("CPU is per 1 000 answered requests: the server's (its process and any it started, from `/proc`), and\n")
	w("the load generator's own (`getrusage` of this process, which shares the two cores with the server; for\n")
	w("the in-process go-vcr row it includes that server). RSS and peak are the server's after the case.\n")
	w("llmproxy's children keep the heap floor the command keeps (`internal/heapfloor`: the collector's goal at\n")
	w("least 16 MB over the live heap); the bare handler runs with Go's defaults (bench/findings.md, stop 40).\n\n")
	w("![replay and scaling chart](performance.svg)\n\n")
	caseTables(w, r.replay, []string{payloadJSON, payloadSSE}, nameReplay, nameLimit)
	r.peersSection(w)

	r.mockSection(w)
	r.newPathsSection(w)

	w("\n## Lookup scaling\n\n")
	w("Cassettes of n distinct recorded requests, request k answered with its own 2 KB JSON: the same answer with\n")
	w("an id of the same length naming k, so that no two stored answers are the same bytes and no layout can gain\n")
	w("from identical bodies; every answer is checked byte for byte. llmproxy's cassettes are built as a user would\n")
	w("from an export: the bench writes the export, then the `llmproxy` command built from this repository imports\n")
	w("it (`llmproxy import --in FILE --cassette FILE`); *build* is that import, timed alone, and *import peak* its\n")
	w("peak RSS. go-vcr's are its YAML, saved by go-vcr. Each size is served by a fresh process; the load (%d\n", scaleConns)
	w("connections) asks for uniformly random recorded interactions, the sizes interleaved round by round.\n")
	w("*Open* is opening the cassette and building the handler in the server; *listening* is from starting the\n")
	w("process to accepting connections; *first answer* from starting it to reading the first response (the page\n")
	w("cache holds the file: it was just written); each is the median of %d starts of a fresh process, the last of\n", startRuns(p))
	w("which serves the load. Memory is read from `/proc/PID/status` after the load: VmRSS,\n")
	w("split into RssAnon (heap, stacks) and RssFile (pages of the memory-mapped cassette this process touched,\n")
	w("which the kernel can drop at will), and VmHWM (peak, over the whole life: the open and the load); *RSS at\n")
	w("first answer* is VmRSS right after the first response, before the load.\n\n")
	w("| server | interactions | file MB | build | import peak MB | open | listening | first answer | RSS at first answer MB | req/s | × smallest | p50 ms | p99 ms | CPU µs/req | RSS MB | anon MB | file-mapped MB | peak MB |\n")
	w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range r.scale {
		if row.Skipped != "" {
			w("| %s | %d | | | | | | | | %s | | | | | | | | |\n", row.Server, row.Size, row.Skipped)
			continue
		}
		peak := "—"
		if row.ImportPeak > 0 {
			peak = fmt.Sprintf("%.0f", mb(row.ImportPeak))
		}
		w("| %s | %d | %.1f | %s | %s | %s | %s | %s | %.1f | %.0f | %.2f | %.3f | %.3f | %.0f | %.1f | %.1f | %.1f | %.1f |\n",
			row.Server, row.Size, mb(row.FileBytes), dur(row.Build), peak, dur(row.Open), dur(row.Listening), dur(row.FirstServed), mb(row.OpenMem.RSS),
			row.t.rps(), row.Ratio, ms(row.t.pct(0.5)), ms(row.t.pct(0.99)), float64(row.t.cpuPerRequest())/1e3,
			mb(row.Mem.RSS), mb(row.Mem.Anon), mb(row.Mem.File), mb(row.Mem.HWM))
	}

	if len(r.record) > 0 {
		rec := r.record[0]
		w("\n## Record overhead\n\n")
		w("One client connection; requests alternate between the fake upstream direct and llmproxy in record mode\n")
		w("in front of it, which writes every exchange to its cassette (one bbolt transaction, two fdatasyncs, each).\n")
		w("%d JSON requests and %d streams per side. The upstream writes each of the 200 SSE events %v after the\n", rec.Requests, rec.Streams, rec.Gap)
		w("previous one with its write time in the event's `id:` field; the client, in the same process, subtracts it\n")
		w("from the time it reads the event. Time to first token is from sending the request to reading the first\n")
		w("content event (the second event; the upstream waits %v before it). The run is made twice: with the\n", rec.Gap)
		w("cassette in the temporary directory, as a user records, and on a tmpfs, where fsync costs nothing, which\n")
		w("leaves the proxy's own cost.\n\n")
		for _, rec := range r.record {
			w("- fsync after a 4 KB write on %s: p50 %.3f ms, p99 %.3f ms.\n", rec.Where, ms(percentile(rec.Sync, 0.5)), ms(percentile(rec.Sync, 0.99)))
		}
		w("\n| cassette on | measure | direct p50 | direct p99 | through llmproxy p50 | p99 | added p50 | added p99 |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
		for _, rec := range r.record {
			row := func(name string, d, p []time.Duration) {
				d50, d99, p50, p99 := percentile(d, 0.5), percentile(d, 0.99), percentile(p, 0.5), percentile(p, 0.99)
				w("| %s | %s | %.3f ms | %.3f ms | %.3f ms | %.3f ms | %+.3f ms | %+.3f ms |\n", rec.Where, name, ms(d50), ms(d99), ms(p50), ms(p99), ms(p50-d50), ms(p99-d99))
			}
			row("2 KB JSON request latency", rec.JSONDirect.lat, rec.JSONProxy.lat)
			row("SSE per-event delay (upstream write → client read)", rec.EventDirect, rec.EventProxy)
			row("SSE time to first token", rec.TTFTDirect, rec.TTFTProxy)
		}
	}

	w("\n## Micro-benchmarks\n\n")
	w("`go test -run XXX -bench . -benchmem ./match/ ./wire/ ./store/` covers match-key computation and structural\n")
	w("canonicalisation (`match`), SSE and NDJSON framing (`wire`) and index lookup at several cassette sizes\n")
	w("(`store`), with allocations. They are for comparing commits on one machine, not for this report.\n")

	w("\n## Findings\n\n")
	w("%s", strings.TrimSpace(findings))
	w("\n")
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// oneLine makes a message fit a table cell.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "|", "\\|")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// peersSection says how each peer was installed, configured and run.
func (r *report) peersSection(w func(string, ...any)) {
	w("### The peers\n\n")
	w("Every server answers the same two requests with the same bytes: a 2 KB `chat.completion` and a 200-event\n")
	w("`chat.completion.chunk` stream (the role, 197 content pieces of %d characters, the finish reason, `[DONE]`).\n", sseChunk)
	w("Both carry exactly the fields aimock renders from a fixture, in its order — OpenAI's shape without\n")
	w("`annotations`, the token details and `service_tier` — so that aimock, which builds its answers from a\n")
	w("fixture's text rather than storing bytes, can serve them too. Each peer holds them in its own way:\n\n")
	w("- **llmproxy**: a cassette written by the bench (`cassette.Replace`), served by `proxy` in replay mode with\n")
	w("  the per-request log line at INFO, as the command line does.\n")
	w("- **go-vcr v4**: a cassette recorded by go-vcr itself from the bare handler, served through its recorder in\n")
	w("  replay mode behind a `net/http` handler (it writes a stream as one body), and as the client's own\n")
	w("  `http.RoundTripper` in process (no HTTP; JSON only, for scale).\n")
	w("- **aimock** (`@copilotkit/aimock`, its `llmock` command): a fixture file matching each question by its text,\n")
	w("  with the answer's text, id, created, model, usage and fingerprint; `--chunk-size %d` makes the stream's\n", sseChunk)
	w("  events; `--log-level warn`; its request journal at its default (1 000 entries).\n")
	w("- **mountebank**: one imposter with two stubs (a body containing `\"stream\":true` gets the stream), each\n")
	w("  response and the `defaultResponse` with `Connection: keep-alive` (its default is to close);\n")
	w("  `--loglevel warn --nologfile`; it writes a stream as one body.\n")
	w("- **WireMock** standalone: the jar the npm package `wiremock` bundles, run by `java -jar`, two stub mappings\n")
	w("  with body files; `--disable-request-logging`, request journal bounded to 1 000 entries; it writes a\n")
	w("  stream as one body.\n\n")
	w("Before its rounds each server gets a warm-up of %v of the same load; the node peers three times that and\n", r.plan.warm)
	w("WireMock ten times, as V8's and the JVM's JIT compilers need longer to settle. Each server runs alone in its\n")
	w("turn: the processes of the others are stopped (`SIGSTOP`) until theirs, so that no JIT compiler, collector or\n")
	w("timer of one server runs on the two shared cores while another is measured.\n\n")
	w("The bench installs the npm peers itself, pinned (")
	for i, pr := range peers {
		if i > 0 {
			w(", ")
		}
		w("`%s@%s`", pr.pkg, pr.version)
	}
	w("), with `npm install --prefix` into a cache outside the repository (`$XDG_CACHE_HOME/llmproxy-bench/npm`, else\n")
	w("`~/.cache/llmproxy-bench/npm`), starts each as a child process on a loopback port, waits until it answers,\n")
	w("and ends it with SIGTERM. A peer it cannot install or start is skipped and named here.\n\n")
	w("Hoverfly is not measured here: its Go module is not served to this machine. The 0.78× (Hoverfly over the\n")
	w("bare handler at 64 connections) this report once quoted, and the ≥ 0.94× target derived from it, were\n")
	w("measured once, separately, and could not be reproduced; both are dropped. An independent harness (closed\n")
	w("loop, every answer checked, each server alone in its turn, four runs on a quiet machine, issue 29) measured\n")
	w("Hoverfly 1.12, built from source and run with its best settings, at 0.58–0.60× a minimal bare `net/http`\n")
	w("server at 64 connections on the 2 KB JSON, and llmproxy replay at 0.79–0.88× the same server.\n\n")
	var notes []string
	for _, pr := range peers {
		if why, ok := r.peers.skipped[pr.name]; ok {
			notes = append(notes, fmt.Sprintf("- %s: not run: %s", pr.name, why))
		}
	}
	seen := map[string]bool{}
	for _, row := range r.replay {
		if row.Failed != "" && !seen[row.Server+row.Failed] && !strings.HasPrefix(row.Failed, "not run") {
			seen[row.Server+row.Failed] = true
			notes = append(notes, fmt.Sprintf("- %s, %s × %d: %s", row.Server, row.Payload, row.Conns, oneLine(row.Failed)))
		}
	}
	if len(notes) == 0 {
		w("In this run every peer installed, started and answered every request with the recorded bytes.\n")
		return
	}
	w("In this run:\n\n%s\n", strings.Join(notes, "\n"))
}

func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", ms(d))
	case d < time.Second:
		return fmt.Sprintf("%.0f ms", ms(d))
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// panel is one bar chart of the SVG: groups of bars, one bar per series.
type panel struct {
	title   string
	groups  []string
	series  []string
	values  [][]float64 // [group][series]; NaN: no bar
	target  float64     // a dashed line; 0: none
	label   string      // of the target line
	missing string      // written where a series has no bar
	unit    func(float64) string
}

// colour keeps one colour per server across the panels.
func colour(series string) string {
	switch series {
	case nameLimit:
		return "#9e9e9e"
	case nameReplay:
		return "#1f77b4"
	case nameVCR:
		return "#ff7f0e"
	case nameAimock:
		return "#2ca02c"
	case nameMountebank:
		return "#9467bd"
	case nameWireMock:
		return "#8c564b"
	}
	return "#ffbb78"
}

func (r *report) svg() string {
	var panels []panel
	// Replay: throughput relative to the limit.
	rp := panel{title: "Replay throughput relative to a bare net/http handler (same run)", target: 0.8, label: "JSON target at 64 conns 0.8×",
		unit: func(v float64) string { return fmt.Sprintf("%.2f×", v) }}
	seen := map[string]int{}
	for _, row := range r.replay {
		if row.t == nil || row.Failed != "" {
			continue
		}
		g := fmt.Sprintf("%s, %d conn", row.Payload, row.Conns)
		if _, ok := seen[g]; !ok {
			seen[g] = len(rp.groups)
			rp.groups = append(rp.groups, g)
		}
		if !contains(rp.series, row.Server) {
			rp.series = append(rp.series, row.Server)
		}
	}
	rp.values = grid(len(rp.groups), len(rp.series))
	for _, row := range r.replay {
		if row.t == nil || row.Failed != "" {
			continue
		}
		rp.values[seen[fmt.Sprintf("%s, %d conn", row.Payload, row.Conns)]][index(rp.series, row.Server)] = row.Ratio
	}
	panels = append(panels, rp)
	// Scaling: throughput relative to the smallest cassette, and memory.
	sp := panel{title: fmt.Sprintf("Lookup throughput relative to the 10-interaction cassette, by cassette size (%d connections)", scaleConns), target: 0.9, label: "target 0.9×", missing: "not run",
		unit: func(v float64) string { return fmt.Sprintf("%.2f×", v) }}
	mp := panel{title: "Server RSS after the lookup load, MB, by cassette size", target: 100, label: "target 100 MB", missing: "not run",
		unit: func(v float64) string { return fmt.Sprintf("%.0f", v) }}
	for _, row := range r.scale {
		g := sizeLabel(row.Size)
		if !contains(sp.groups, g) {
			sp.groups = append(sp.groups, g)
		}
		if !contains(sp.series, row.Server) {
			sp.series = append(sp.series, row.Server)
		}
	}
	sp.values = grid(len(sp.groups), len(sp.series))
	mp.groups, mp.series, mp.values = sp.groups, sp.series, grid(len(sp.groups), len(sp.series))
	for _, row := range r.scale {
		if row.t == nil {
			continue
		}
		gi, si := index(sp.groups, sizeLabel(row.Size)), index(sp.series, row.Server)
		sp.values[gi][si] = row.Ratio
		mp.values[gi][si] = mb(row.Mem.RSS)
	}
	panels = append(panels, sp, mp)

	const width, ph = 940, 250
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, ph*len(panels)+10, width, ph*len(panels)+10)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for k, p := range panels {
		drawPanel(&b, p, 0, k*ph+10, width, ph)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func drawPanel(b *strings.Builder, p panel, x0, y0, width, height int) {
	left, right, top, bottom := x0+50, x0+width-300, y0+24, y0+height-40
	maxV := p.target
	for _, g := range p.values {
		for _, v := range g {
			if !math.IsNaN(v) {
				maxV = math.Max(maxV, v)
			}
		}
	}
	maxV *= 1.15
	if maxV <= 0 {
		maxV = 1
	}
	y := func(v float64) float64 { return float64(bottom) - v/maxV*float64(bottom-top) }
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="13" font-weight="bold">%s</text>`+"\n", x0+10, y0+14, html.EscapeString(p.title))
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", left, bottom, right, bottom)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", left, top, left, bottom)
	for _, f := range []float64{0, 0.25, 0.5, 0.75, 1} {
		v := maxV / 1.15 * f
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%s</text>`+"\n", left-4, y(v)+4, html.EscapeString(p.unit(v)))
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", left+1, y(v), right, y(v))
	}
	gw := float64(right-left) / float64(max(len(p.groups), 1))
	bw := (gw - 16) / float64(max(len(p.series), 1))
	for gi, g := range p.groups {
		gx := float64(left) + float64(gi)*gw + 8
		for si := range p.series {
			v := p.values[gi][si]
			bx := gx + float64(si)*bw
			if math.IsNaN(v) {
				if p.missing != "" {
					fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" font-size="9" fill="#999">%s</text>`+"\n", bx+bw/2-1, bottom-4, p.missing)
				}
				continue
			}
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", bx, y(v), bw-2, float64(bottom)-y(v), colour(p.series[si]))
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="9">%s</text>`+"\n", bx+bw/2-1, y(v)-3, html.EscapeString(p.unit(v)))
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", gx+(gw-16)/2, bottom+14, html.EscapeString(g))
	}
	if p.target > 0 {
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#d62728" stroke-dasharray="5,3"/>`+"\n", left, y(p.target), right, y(p.target))
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" font-size="10" fill="#d62728">%s</text>`+"\n", right-2, y(p.target)-3, html.EscapeString(p.label))
	}
	for si, s := range p.series {
		ly := top + 20 + si*16
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/>`+"\n", right+4, ly, colour(s))
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", right+18, ly+9, html.EscapeString(s))
	}
}

// sizeLabel spells a cassette size with thin spaces between thousands.
func sizeLabel(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "\u2009" + s[i:]
	}
	return s + " interactions"
}

func grid(g, s int) [][]float64 {
	out := make([][]float64, g)
	for i := range out {
		out[i] = make([]float64, s)
		for j := range out[i] {
			out[i][j] = math.NaN()
		}
	}
	return out
}

func contains(s []string, v string) bool { return index(s, v) >= 0 }

func index(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// caseTables writes a table per payload and number of connections of
// rows, in that order: subject is the server the "÷ this" column is of,
// limit the one the ratios are against.
func caseTables(w func(string, ...any), all []replayRow, payloads []string, subject, limit string) {
	for _, payload := range payloads {
		for _, conns := range []int{1, 64} {
			var rows []replayRow
			for _, row := range all {
				if row.Payload == payload && row.Conns == conns {
					rows = append(rows, row)
				}
			}
			if len(rows) == 0 {
				continue
			}
			var rp, bare *replayRow
			for i := range rows {
				switch rows[i].Server {
				case subject:
					rp = &rows[i]
				case limit:
					bare = &rows[i]
				}
			}
			w("### %s, %d connection%s\n\n", payload, conns, plural(conns))
			w("| server | req/s | × bare | llmproxy ÷ this | p50 ms | p99 ms | p99 × bare | server CPU ms / 1 000 req | × bare's | load generator CPU ms / 1 000 req | RSS MB | peak MB |\n")
			w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
			for _, row := range rows {
				name := row.Server
				if row.Note != "" {
					name += " (" + row.Note + ")"
				}
				if row.t == nil {
					w("| %s | %s | | | | | | | | | | |\n", name, oneLine(row.Failed))
					continue
				}
				vs, cpu, cpuX, p99X, rss, peak := "—", "—", "—", "—", "—", "—"
				if rp != nil && row.Server != subject {
					vs = fmt.Sprintf("%.2f", row.VsReplay)
				}
				if c := row.t.cpuPerRequest(); c > 0 {
					cpu = fmt.Sprintf("%.0f", perThousand(c))
					if bc := bare.t.cpuPerRequest(); bc > 0 {
						cpuX = fmt.Sprintf("%.2f", float64(c)/float64(bc))
					}
				}
				if b99 := bare.t.pct(0.99); b99 > 0 {
					p99X = fmt.Sprintf("%.2f", float64(row.t.pct(0.99))/float64(b99))
				}
				if row.Mem.RSS > 0 {
					rss, peak = fmt.Sprintf("%.1f", mb(row.Mem.RSS)), fmt.Sprintf("%.1f", mb(row.Mem.HWM))
				}
				ratio := fmt.Sprintf("%.2f", row.Ratio)
				if row.Failed != "" {
					ratio, vs = "— ("+oneLine(row.Failed)+")", "—"
				}
				w("| %s | %.0f | %s | %s | %.3f | %.3f | %s | %s | %s | %.0f | %s | %s |\n", name, row.t.rps(), ratio, vs,
					ms(row.t.pct(0.5)), ms(row.t.pct(0.99)), p99X, cpu, cpuX, perThousand(row.t.genCPUPerRequest()), rss, peak)
			}
			w("\n")
		}
	}
}

// mockSection is the report of the mock scenario; its targets are in the
// Targets table.
func (r *report) mockSection(w func(string, ...any)) {
	if len(r.mock) == 0 {
		return
	}
	w("\n## Scenarios: `llmproxy mock` under load\n\n")
	w("Two cases, each JSON and SSE: the weather round of docs/scenarios.md (a tool call, then the answer to the tool result) and the 2 KB text (the replay cases' question answered with their text, streamed in pieces of %d characters: 200 events). Each is served by\n", sseChunk)
	w("`proxy` in mock mode as `llmproxy mock` builds it (default pace and log level, one process), against a\n")
	w("bare `net/http` handler serving the very bytes and headers mock wrote for the round, chosen by the request\n")
	w("alone, doing the least a handler can: header slices copied from a map built once, each body (an SSE\n")
	w("answer's whole stream too: the round paces nothing) in one Write and no flush, so that net/http sends a\n")
	w("stream that fits its buffers with the chunked body's end in one system call, as mock does. Each\n")
	w("connection plays the round (the weather's ask then answer, the text's one question) again and again in a conversation of its own\n")
	w("(`X-Llmproxy-Conversation`, a fresh one per connection and run), so 64 connections are 64 conversations\n")
	w("in parallel. Every answer is checked\n")
	w("byte for byte with the response ids and the stream padding masked (they count each conversation's\n")
	w("answers). A request is one answer (half a weather round). Servers interleaved round by round, each alone in its\n")
	w("turn, as in the replay cases; *llmproxy ÷ this* is mock's throughput over that server's. Mock's RSS\n")
	w("includes the conversations of the runs before (an engine keeps each one it met). aimock serves the same\n")
	w("answers from its fixtures (the tool call matched by the question, the answer by `toolCallId`, the text by\n")
	w("the question; the bench's id, created and fingerprint), checked once to say what mock's say (text, tool\n")
	w("calls, finish reason) and then byte for byte against its own first answer. Targets: ≥ 0.85× the bare\n")
	w("handler, and ahead of aimock, in the Targets table.\n\n")
	caseTables(w, r.mock, mockPayloads, nameMock, nameMockBare)
}
