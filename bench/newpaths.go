package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/wire"
)

// The newpaths scenario measures the paths issues 24–28 added, each as its
// issue names its target, in the same run as the rest of the report:
//
//   - a session switch (issue 24): BenchmarkSessionSwitch, in process;
//   - replay of an MCP tools/call against a model call (issue 25):
//     BenchmarkReplayMCP in ./proxy, in process;
//   - `llmproxy diff` of 100 000 interactions (issue 26): BenchmarkReview
//     in ./review, in process;
//   - replay of a 200-message ConverseStream against a bare handler writing
//     the same frames (issue 27): across processes, as the SSE case;
//     BenchmarkReplayEventStream in ./proxy beside it, in process;
//   - replay with no fault configured against the same replay built from
//     the commit before faults (issue 28): across processes.
//
// The in-process benchmarks are the packages' own, run by `go test`; their
// figures are read from its output.

// newPaths is what the newpaths scenario measured. A part that could not
// be measured keeps its error.
type newPaths struct {
	session, proxy, review          []benchResult
	sessionErr, proxyErr, reviewErr error
	converse, faultsOff             []replayRow
	converseErr, faultsOffErr       error
	took                            time.Duration
}

const (
	// converseMessages is the length of the replayed ConverseStream.
	converseMessages = 200
	// conversePath is the ConverseStream route the converse children
	// serve every request at.
	conversePath = "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream"
	// beforeFaults is main just before faults on demand were merged
	// (fe31928^1): the "before" of issue 28's target.
	beforeFaults = "44e9b7d2035d97a6b75e71b36b538251907f0ee2"

	payloadConverse    = "200-message ConverseStream"
	nameConverseBare   = "limit: bare net/http handler writing the frames"
	nameConverseReplay = "llmproxy replay (ConverseStream)"
	nameBeforeFaults   = "llmproxy replay built before faults (" + "44e9b7d" + ")"
)

// converseRequest is the ConverseStream request of the scenario.
var converseRequest = []byte(`{"messages":[{"role":"user","content":[{"text":"Tell me a long story."}]}]}`)

// converseStream is the recorded ConverseStream answer: its headers and
// its converseMessages eventstream frames, as wire writes them.
func converseStream() (http.Header, [][]byte, error) {
	// A start, a delta per word, the block's stop, the message's stop and
	// the metadata.
	words := strings.TrimSpace(strings.Repeat("word ", converseMessages-4))
	w, err := wire.Write(wire.KindBedrockConverse, wire.Answer{ID: "bench", Text: words, Usage: wire.Usage{Input: 5, Output: converseMessages - 4}},
		wire.WriteOptions{Stream: true})
	if err != nil {
		return nil, nil, err
	}
	frames := make([][]byte, len(w.Events))
	for k, e := range w.Events {
		frames[k] = e.Raw
	}
	if len(frames) != converseMessages {
		return nil, nil, fmt.Errorf("ConverseStream of %d messages, want %d", len(frames), converseMessages)
	}
	return w.Header, frames, nil
}

// writeConverseCassette writes a cassette holding the ConverseStream
// exchange, indexed as replay reads it.
func writeConverseCassette(path string) error {
	h, frames, err := converseStream()
	if err != nil {
		return err
	}
	resp := cassette.Response{Status: http.StatusOK, Headers: h, Framing: "eventstream"}
	for k, f := range frames {
		resp.Events = append(resp.Events, cassette.Event{AtMillis: float64(k), Data: f})
	}
	kind := wire.KindBedrockConverse
	i := &cassette.Interaction{Upstream: cassette.DefaultUpstream, Provider: kind.Provider(), Kind: string(kind), RecordedAt: recordedAt,
		Request: cassette.Request{Method: http.MethodPost, Path: conversePath,
			Headers: http.Header{"Content-Type": {"application/json"}}, Body: converseRequest},
		Response: resp}
	return writeCassette(path, []*cassette.Interaction{i})
}

// frameServer is the limit of the ConverseStream case: the least a
// net/http handler can do to serve the frames, as the bare handler does a
// stream (header slices copied from a map built once, a Write and a flush
// per frame, as replay writes them).
type frameServer struct {
	header http.Header
	frames [][]byte
}

func newFrameServer() (*frameServer, error) {
	h, frames, err := converseStream()
	return &frameServer{header: h, frames: frames}, err
}

func (f *frameServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	h := w.Header()
	for k, v := range f.header {
		h[k] = v
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for _, fr := range f.frames {
		if _, err := w.Write(fr); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// atPath serves every request at path: the load generator posts to
// chatPath, the ConverseStream children answer it as Bedrock's route.
func atPath(path string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.URL.RawPath = path
		r.URL.Path, _ = url.PathUnescape(path)
		h.ServeHTTP(w, r)
	})
}

// newPathsScenario runs the parts one after the other; a part that fails
// is reported in its target rows and the others still run.
func newPathsScenario(p plan, dir string) (*newPaths, error) {
	t0 := time.Now()
	n := &newPaths{}
	root, err := moduleDir("github.com/llmproxy/llmproxy")
	if err != nil {
		return nil, err
	}
	benchDir, err := moduleDir("")
	if err != nil {
		return nil, err
	}
	switches, perRequest := newPathsBenchtime(p)
	step := func(what string, f func()) {
		s := time.Now()
		f()
		p.logf("newpaths: %s took %v", what, time.Since(s).Round(100*time.Millisecond))
	}
	step("session switch", func() {
		n.session, n.sessionErr = goBench(benchDir, ".", "^BenchmarkSession(Switch|OpenBaseline)$", switches, benchRounds, dir)
	})
	step("MCP and ConverseStream in process", func() {
		n.proxy, n.proxyErr = goBench(root, "./proxy", "^(BenchmarkReplayMCP|BenchmarkReplayEventStream)$", perRequest, benchRounds, dir)
	})
	step("diff of 100 000", func() {
		n.review, n.reviewErr = goBench(root, "./review", "^BenchmarkReview$", "1x", 1, dir)
	})
	step("ConverseStream across processes", func() { n.converse, n.converseErr = converseScenario(p, dir) })
	step("faults off, before and after", func() { n.faultsOff, n.faultsOffErr = faultsOffScenario(p, dir, root) })
	n.took = time.Since(t0)
	return n, nil
}

// benchRounds is how many times the in-process benchmarks run, but the
// diff's (one round: it takes seconds and its figures are its own).
const benchRounds = 3

// newPathsBenchtime is the -benchtime of the session switch benchmarks
// and of the per-request ones in p's mode.
func newPathsBenchtime(p plan) (switches, perRequest string) {
	if p.quick {
		return "30x", "200ms"
	}
	return "100x", "1s"
}

// converseScenario replays the ConverseStream across processes against
// the bare handler writing the same frames, at 1 and 64 connections.
func converseScenario(p plan, dir string) ([]replayRow, error) {
	path := filepath.Join(dir, "converse.cassette")
	if err := writeConverseCassette(path); err != nil {
		return nil, err
	}
	_, frames, err := converseStream()
	if err != nil {
		return nil, err
	}
	servers, stop, err := startServers(p, dir, []namedChild{
		{nameConverseBare, serveOptions{kind: "frames", path: conversePath}},
		{nameConverseReplay, serveOptions{kind: "replay", cassette: path, path: conversePath, cpuprofile: p.profile("replay-converse")}},
	})
	if err != nil {
		return nil, err
	}
	defer stop()
	return measureCases(p, servers, converseRequest, bytes.Join(frames, nil), payloadConverse, true, nameConverseReplay, 1, 64)
}

// faultsOffScenario replays the 2 KB JSON at 64 connections with no fault
// configured, as built now and as built from beforeFaults, beside the bare
// handler. The build of now runs with GOGC=100, as the one before does:
// the heap floor llmproxy keeps since is not what faults cost.
func faultsOffScenario(p plan, dir, root string) ([]replayRow, error) {
	before, err := buildBeforeFaults(dir, root)
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", beforeFaults[:7], err)
	}
	path := filepath.Join(dir, "faults-off.cassette")
	if err := buildReplayCassette(path); err != nil {
		return nil, err
	}
	servers, stop, err := startServers(p, dir, []namedChild{
		{nameLimit, serveOptions{kind: "bare"}},
		{nameReplay, serveOptions{kind: "replay", cassette: path, env: []string{"GOGC=100"}}},
		{nameBeforeFaults, serveOptions{kind: "replay", cassette: path, exe: before, env: []string{"GOGC=100"}}},
	})
	if err != nil {
		return nil, err
	}
	defer stop()
	return measureCases(p, servers, requestBody(0, false), jsonResponse(), payloadJSON, false, nameReplay, 64)
}

type namedChild struct {
	name string
	o    serveOptions
}

// startServers starts a child per entry (measureCases checks their
// answers); stop ends them all.
func startServers(p plan, dir string, cs []namedChild) (servers []server, stop func(), err error) {
	var children []*child
	stop = func() {
		for _, c := range children {
			c.stop()
		}
	}
	for _, nc := range cs {
		c, err := startChild(dir, nc.o)
		if err != nil {
			stop()
			return nil, nil, fmt.Errorf("%s: %w", nc.name, err)
		}
		children = append(children, c)
		servers = append(servers, server{name: nc.name, base: c.URL, client: newClient, proc: c, warm: p.warm})
	}
	return servers, stop, nil
}

// measureCases checks that every server answers body with want, then
// runs a replay case per number of connections; servers[0] is the limit.
func measureCases(p plan, servers []server, body, want []byte, payload string, stream bool, subject string, conns ...int) ([]replayRow, error) {
	for _, s := range servers {
		if err := expect(s, body, want); err != nil {
			return nil, err
		}
	}
	var rows []replayRow
	for _, c := range conns {
		l := load{conns: c, max: p.maxRequests, body: func(int) []byte { return body }, want: same(want)}
		got, err := replayCase(p, servers, l, payload, stream, subject)
		if err != nil {
			return nil, err
		}
		rows = append(rows, got...)
	}
	return rows, nil
}

// buildBeforeFaults builds the bench as it was at beforeFaults, from
// `git archive` of the repository at root into dir, and returns the
// binary: its replay child is replay before faults on demand existed.
func buildBeforeFaults(dir, root string) (string, error) {
	src := filepath.Join(dir, "before-faults")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", beforeFaults)
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	untar.Stdin = pipe
	var stderr bytes.Buffer
	archive.Stderr, untar.Stderr = &stderr, &stderr
	if err := untar.Start(); err != nil {
		return "", err
	}
	if err := archive.Run(); err != nil {
		_ = untar.Wait()
		return "", fmt.Errorf("git archive: %w: %s", err, stderr.Bytes())
	}
	if err := untar.Wait(); err != nil {
		return "", fmt.Errorf("tar: %w: %s", err, stderr.Bytes())
	}
	bin := filepath.Join(dir, "bench-before-faults")
	// -trimpath: the build cache serves the packages of a tree extracted
	// anew each run.
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Dir = filepath.Join(src, "bench")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w: %s", err, tailOf(out, 2000))
	}
	return bin, nil
}

// moduleDir is the directory of module path, or of the main module (the
// bench) for "".
func moduleDir(path string) (string, error) {
	args := []string{"list", "-m", "-f", "{{.Dir}}"}
	if path != "" {
		args = append(args, path)
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		return "", fmt.Errorf("locate module %q: %w", path, err)
	}
	return strings.TrimSpace(string(out)), nil
}
