package main

import (
	"fmt"
	"time"
)

// Targets of the newpaths scenario, as their issues give them.
const (
	targetSwitch       = "session switch (`PUT /_llmproxy/session`), 1 000-interaction cassettes, in process: ≤ 5 ms of CPU"
	targetMCPJSON      = "replay of an MCP `tools/call`, JSON answer, in process: ≤ 1.2× a replayed model call's time per request"
	targetMCPSSE       = "replay of an MCP `tools/call`, SSE answer, in process: ≤ 1.2× a replayed model call's time per request"
	targetConverse1    = "replay 200-message ConverseStream, 1 connection: ≥ 0.85× the bare handler writing the same frames"
	targetConverse64   = "replay 200-message ConverseStream, 64 connections: ≥ 0.85× the bare handler writing the same frames"
	targetFaultsOff    = "replay 2 KB JSON, 64 connections, no fault configured: server CPU per request ≤ 1.05× the same replay built before faults (" + "44e9b7d" + ")"
	targetDiffHeap     = "`llmproxy diff` of 100 000 interactions a side, in process: peak live heap ≤ ¼ of one cassette's size"
	mcpBaseline        = "BenchmarkReplayMCP/model_openai-chat_(baseline)"
	eventStreamBench   = "BenchmarkReplayEventStream"
	sessionSwitchBench = "BenchmarkSessionSwitch"
	sessionOpenBench   = "BenchmarkSessionOpenBaseline"
)

// targets are the rows of the newpaths scenario in the Targets table; a
// nil n (the scenario not run) gives them as not run.
func (n *newPaths) targets() []target {
	all := []string{targetSwitch, targetMCPJSON, targetMCPSSE, targetConverse1, targetConverse64, targetFaultsOff, targetDiffHeap}
	if n == nil {
		var ts []target
		for _, what := range all {
			ts = append(ts, target{what: what, measured: "not run", skipped: true})
		}
		return ts
	}
	ts := []target{n.switchTarget()}
	ts = append(ts, n.mcpTarget(targetMCPJSON, "BenchmarkReplayMCP/mcp_tools/call_JSON"), n.mcpTarget(targetMCPSSE, "BenchmarkReplayMCP/mcp_tools/call_SSE"))
	for _, c := range []struct {
		what  string
		conns int
	}{{targetConverse1, 1}, {targetConverse64, 64}} {
		ts = append(ts, n.converseTarget(c.what, c.conns))
	}
	return append(ts, n.faultsOffTarget(), n.diffTarget())
}

// failed is a target whose measure failed.
func failed(what string, err error) target {
	return target{what: what, measured: "not measured: " + oneLine(err.Error())}
}

func (n *newPaths) switchTarget() target {
	if n.sessionErr != nil {
		return failed(targetSwitch, n.sessionErr)
	}
	wall, runs := benchMedian(n.session, sessionSwitchBench, "ns/op")
	if runs == 0 {
		return failed(targetSwitch, fmt.Errorf("no %s in the output", sessionSwitchBench))
	}
	cpu, _ := benchMedian(n.session, sessionSwitchBench, "cpu-ms/op")
	open, _ := benchMedian(n.session, sessionOpenBench, "ns/op")
	openCPU, _ := benchMedian(n.session, sessionOpenBench, "cpu-ms/op")
	return target{what: targetSwitch, met: cpu > 0 && cpu <= 5,
		measured: fmt.Sprintf("%.1f ms CPU, %.1f ms wall (median of %d rounds); `replay --cassette`'s open and close of one: %.1f ms CPU, %.1f ms wall",
			cpu, wall/1e6, runs, openCPU, open/1e6)}
}

func (n *newPaths) mcpTarget(what, name string) target {
	if n.proxyErr != nil {
		return failed(what, n.proxyErr)
	}
	x, rounds := benchRatio(n.proxy, name, mcpBaseline, "ns/op")
	if rounds == 0 {
		return failed(what, fmt.Errorf("no %s and %s in the output", mcpBaseline, name))
	}
	base, _ := benchMedian(n.proxy, mcpBaseline, "ns/op")
	mcp, _ := benchMedian(n.proxy, name, "ns/op")
	return target{what: what, met: x <= 1.2,
		measured: fmt.Sprintf("%.2f× (median of %d rounds' ratios; medians %.1f vs %.1f µs)", x, rounds, mcp/1e3, base/1e3)}
}

func (n *newPaths) converseTarget(what string, conns int) target {
	if n.converseErr != nil {
		return failed(what, n.converseErr)
	}
	rp, bare := rowOf(n.converse, conns, nameConverseReplay), rowOf(n.converse, conns, nameConverseBare)
	if rp == nil || bare == nil || rp.t == nil {
		return target{what: what, measured: "not run", skipped: true}
	}
	if rp.Failed != "" {
		return target{what: what, measured: rp.Failed}
	}
	m := fmt.Sprintf("%.2f× (server CPU %.2f× bare's)", rp.Ratio, cpuRatio(rp, bare))
	if conns == 1 && n.proxyErr == nil {
		if x, runs := benchMedian(n.proxy, eventStreamBench, "replay/bare"); runs > 0 {
			m += fmt.Sprintf("; in process (%s, a recorder for the client): %.2f×", eventStreamBench, 1/x)
		}
	}
	return target{what: what, measured: m, met: rp.Ratio >= 0.85}
}

func (n *newPaths) faultsOffTarget() target {
	if n.faultsOffErr != nil {
		return failed(targetFaultsOff, n.faultsOffErr)
	}
	after, before := rowOf(n.faultsOff, 64, nameReplay), rowOf(n.faultsOff, 64, nameBeforeFaults)
	if after == nil || before == nil || after.t == nil || before.t == nil {
		return target{what: targetFaultsOff, measured: "not run", skipped: true}
	}
	if before.Failed != "" || after.Failed != "" {
		return target{what: targetFaultsOff, measured: after.Failed + before.Failed}
	}
	// before.VsReplay is the replay built now over the one built before,
	// the median of the per-round ratios.
	x := cpuRatio(after, before)
	return target{what: targetFaultsOff, met: x > 0 && x <= 1.05,
		measured: fmt.Sprintf("%.2f× (%.1f vs %.1f µs); throughput now ÷ before %.2f× (against bare: now %.2f×, before %.2f×)",
			x, float64(after.t.cpuPerRequest())/1e3, float64(before.t.cpuPerRequest())/1e3, before.VsReplay, after.Ratio, before.Ratio)}
}

func (n *newPaths) diffTarget() target {
	if n.reviewErr != nil {
		return failed(targetDiffHeap, n.reviewErr)
	}
	const big, small = "BenchmarkReview/100000", "BenchmarkReview/10000"
	heap, runs := benchMedian(n.review, big, "peak-heap-MB")
	size, _ := benchMedian(n.review, big, "cassette-MB")
	if runs == 0 || size == 0 {
		return failed(targetDiffHeap, fmt.Errorf("no %s with peak-heap-MB and cassette-MB in the output", big))
	}
	took, _ := benchMedian(n.review, big, "ns/op")
	smallHeap, _ := benchMedian(n.review, small, "peak-heap-MB")
	smallTook, _ := benchMedian(n.review, small, "ns/op")
	return target{what: targetDiffHeap, met: heap <= size/4,
		measured: fmt.Sprintf("%.1f MB of %.0f MB (%.2f×), %s; 10 000 a side: %.1f MB, %s",
			heap, size, heap/size, dur(time.Duration(took)), smallHeap, dur(time.Duration(smallTook)))}
}

// rowOf is the row of server at conns among rows, nil when none.
func rowOf(rows []replayRow, conns int, server string) *replayRow {
	for i := range rows {
		if rows[i].Conns == conns && rows[i].Server == server {
			return &rows[i]
		}
	}
	return nil
}

// cpuRatio is a's server CPU per request over b's; 0 when unknown.
func cpuRatio(a, b *replayRow) float64 {
	if a.t == nil || b.t == nil || b.t.cpuPerRequest() == 0 {
		return 0
	}
	return float64(a.t.cpuPerRequest()) / float64(b.t.cpuPerRequest())
}

// newPathsSection says how the newpaths scenario measured each path, with
// the tables of its two cases across processes.
func (r *report) newPathsSection(w func(string, ...any)) {
	n := r.newPaths
	if n == nil {
		return
	}
	w("\n## The paths of issues 24–28\n\n")
	w("Each measured in this run (%s in all), as its issue names its target; the targets are in the Targets table.\n\n", n.took.Round(time.Second))
	switches, perRequest := newPathsBenchtime(r.plan)
	w("- **Session switch** (issue 24): `BenchmarkSessionSwitch` in `bench/` (`go test -bench`, -benchtime %s, %d rounds):\n", switches, benchRounds)
	w("  `PUT /_llmproxy/session` alternating between two cassettes of 1 000 interactions in replay, in process; the\n")
	w("  previous session ends with its summary. Beside it `BenchmarkSessionOpenBaseline`: what `replay --cassette`\n")
	w("  does with one cassette at start and end. The target is on the process's CPU time per switch (wall time\n")
	w("  beside it: on the shared cores it mostly measures waiting for one).\n")
	w("- **MCP replay** (issue 25): `BenchmarkReplayMCP` in `proxy/` (-benchtime %s, %d rounds): a replayed `tools/call`, its\n", perRequest, benchRounds)
	w("  answer as JSON and as a one-event SSE stream with its JSON-RPC id rewritten, against a replayed OpenAI chat\n")
	w("  call on the same server and cassette, in process; the median over the rounds of each round's ratio of the\n")
	w("  times per request. Each round is one run of the package's test binary (`go test -c`, compiled once), so\n")
	w("  that the cases compared run close together.\n")
	w("- **`llmproxy diff` of 100 000 interactions** (issue 26): `BenchmarkReview` in `review/` (one run): two\n")
	w("  cassettes of four-turn conversations, a tenth reworded, diffed to the JSON report, the live heap sampled\n")
	w("  every millisecond; 10 000 a side is the baseline. Memory must not hold the bodies: the peak is compared\n")
	w("  with one cassette's size on disk.\n")
	w("- **ConverseStream** (issue 27): across processes, as the SSE case: a cassette holding one Bedrock\n")
	w("  ConverseStream of %d eventstream frames (as `wire` writes them), served by a replay child, against a bare\n", converseMessages)
	w("  `net/http` child writing the same headers and frames, a Write and a flush each. The load generator posts to\n")
	w("  the chat path; both children serve every request at the ConverseStream route. `BenchmarkReplayEventStream`\n")
	w("  in `proxy/` (in process, a recorder for the client) is quoted beside the 1-connection row.\n")
	w("- **Faults off** (issue 28): across processes, replay of the 2 KB JSON with no fault configured, as built now\n")
	w("  and as built from %s (main just before faults on demand were merged, built by the bench from\n", beforeFaults[:7])
	w("  `git archive`; the cassette format is the same), beside the bare handler, interleaved round by round.\n")
	w("  Both run with `GOGC=100`: the build of now without the heap floor llmproxy keeps since (`internal/heapfloor`),\n")
	w("  which is not part of what faults cost.\n")
	w("  The target is on the server's CPU per request, the steadier measure of a cost on these shared cores\n")
	w("  (throughput at 64 connections moves with the load generator's share of them): met when now ÷ before is at\n")
	w("  most 1.05. The commit is fixed, so what changed in replay since (faster or slower) counts too. Faults on\n")
	w("  (`--fault %s`) is the replay case's row above.\n\n", faultSpec)
	if n.converseErr != nil {
		w("ConverseStream: not measured: %s\n\n", oneLine(n.converseErr.Error()))
	}
	if len(n.converse) > 0 {
		w("ConverseStream, across processes:\n\n")
	}
	caseTables(w, n.converse, []string{payloadConverse}, nameConverseReplay, nameConverseBare)
	if n.faultsOffErr != nil {
		w("Faults off: not measured: %s\n\n", oneLine(n.faultsOffErr.Error()))
	}
	if len(n.faultsOff) > 0 {
		w("Faults off, replay as built now and before faults, across processes:\n\n")
	}
	caseTables(w, n.faultsOff, []string{payloadJSON}, nameReplay, nameLimit)
}
