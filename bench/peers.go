package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A peer is another record/replay or stub server, installed from npm into a
// cache outside the repository and run as a child process on loopback,
// serving the bench's two answers stubbed in its own way.
type peer struct {
	// name is how the report names it.
	name string
	// pkg and version are its npm package, pinned.
	pkg, version string
	// start writes its stubs into dir and starts it on port.
	start func(npm, dir string, port int) (*child, error)
	// oneWrite says the peer writes a streamed answer as one body rather
	// than event by event, as the bare handler and llmproxy do.
	oneWrite bool
	// warm is its warm-up in multiples of the plan's: a JIT compiler
	// (V8's, the JVM's) needs longer than a Go server to settle.
	warm int
}

const (
	nameAimock     = "aimock 1.43 (fixture)"
	nameMountebank = "mountebank 2.9 (imposter)"
	nameWireMock   = "WireMock 3.13 standalone (stub)"
)

var peers = []peer{
	{name: nameAimock, pkg: "@copilotkit/aimock", version: "1.43.0", start: startAimock, warm: 3},
	{name: nameMountebank, pkg: "mountebank", version: "2.9.1", start: startMountebank, oneWrite: true, warm: 3},
	{name: nameWireMock, pkg: "wiremock", version: "3.13.2", start: startWireMock, oneWrite: true, warm: 10},
}

// peerSet is the peers of one run: those that installed, and why the others
// did not.
type peerSet struct {
	npm     string // the npm prefix they are installed in
	run     []peer
	skipped map[string]string // name → why
}

// npmDir is where the bench installs its npm peers: a cache outside the
// repository ($XDG_CACHE_HOME or ~/.cache).
func npmDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "llmproxy-bench", "npm"), nil
}

// installedVersion is the version of an npm package under prefix, "" when
// it is not installed.
func installedVersion(prefix, pkg string) string {
	b, err := os.ReadFile(filepath.Join(prefix, "node_modules", pkg, "package.json"))
	if err != nil {
		return ""
	}
	var m struct{ Version string }
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	return m.Version
}

// installPeers installs the wanted peers (by peerKey) at their pinned versions (once;
// later runs find them in the cache) and says why any cannot run.
func installPeers(p plan, want map[string]bool) peerSet {
	ps := peerSet{skipped: map[string]string{}}
	var todo []peer
	for _, pr := range peers {
		if !want[peerKey(pr.name)] {
			continue
		}
		todo = append(todo, pr)
	}
	if len(todo) == 0 {
		return ps
	}
	skipAll := func(why string) peerSet {
		for _, pr := range todo {
			ps.skipped[pr.name] = why
		}
		return ps
	}
	dir, err := npmDir()
	if err != nil {
		return skipAll("no cache directory: " + err.Error())
	}
	ps.npm = dir
	if _, err := exec.LookPath("node"); err != nil {
		return skipAll("node is not installed")
	}
	var missing []string
	for _, pr := range todo {
		if installedVersion(dir, pr.pkg) != pr.version {
			missing = append(missing, pr.pkg+"@"+pr.version)
		}
	}
	if len(missing) > 0 {
		if _, err := exec.LookPath("npm"); err != nil {
			return skipAll("npm is not installed")
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return skipAll("cannot create the npm cache: " + err.Error())
		}
		p.logf("peers: npm install %s into %s", strings.Join(missing, " "), dir)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		args := append([]string{"install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error", "--save-exact"}, missing...)
		if out, err := exec.CommandContext(ctx, "npm", args...).CombinedOutput(); err != nil {
			p.logf("peers: npm install failed: %v\n%s", err, out)
		}
	}
	for _, pr := range todo {
		if v := installedVersion(dir, pr.pkg); v != pr.version {
			ps.skipped[pr.name] = fmt.Sprintf("npm could not install %s@%s (found %q)", pr.pkg, pr.version, v)
			continue
		}
		if pr.name == nameWireMock {
			if _, err := exec.LookPath("java"); err != nil {
				ps.skipped[pr.name] = "no java on PATH for the WireMock jar"
				continue
			}
		}
		ps.run = append(ps.run, pr)
	}
	return ps
}

// peerKey is the short name of a peer for the -peers flag.
func peerKey(name string) string {
	return strings.ToLower(strings.Fields(name)[0])
}

// freePort is a loopback port nothing listens on (for a peer that must be
// told its port).
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startPeer starts argv with its output in a log file in dir and waits
// until ready (a GET of readyURL answers with any status) or the process
// ends or a minute passes.
func startPeer(name, dir string, port int, readyURL string, argv ...string) (*child, error) {
	logf, err := os.CreateTemp(dir, peerKey(name)+"-*.log")
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	c := &child{name: name, cmd: exec.Command(argv[0], argv[1:]...), logPath: logf.Name(), URL: "http://127.0.0.1:" + strconv.Itoa(port)}
	c.cmd.Dir = dir
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	// Should the bench die without stopping it, the peer gets SIGTERM
	// rather than living on (the bench's own servers end with their
	// standard input).
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	c.Started = time.Now()
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c.watch()
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := hc.Get(readyURL)
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case <-c.exited:
			return nil, fmt.Errorf("%s exited before it was ready: %v%s", name, c.waitErr, c.tail())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, fmt.Errorf("%s not ready within a minute%s", name, c.tail())
		}
	}
	c.Ready = time.Now()
	c.Open = c.Ready.Sub(c.Started)
	return c, nil
}

// startAimock serves the two answers from an aimock fixture file: the JSON
// answer's text and envelope for the plain question, the stream's text for
// the streamed one (aimock splits it into chunks of --chunk-size
// characters, one event each).
func startAimock(npm, dir string, port int) (*child, error) {
	return runAimock(npm, dir, port, aimockTextFixtures())
}

// aimockResponse is the response of an aimock fixture, its envelope that
// of the bench's answers.
type aimockResponse struct {
	Content           string           `json:"content,omitempty"`
	ToolCalls         []aimockToolCall `json:"toolCalls,omitempty"`
	ID                string           `json:"id"`
	Created           int64            `json:"created"`
	Model             string           `json:"model"`
	Usage             map[string]int   `json:"usage,omitempty"`
	FinishReason      string           `json:"finishReason"`
	SystemFingerprint string           `json:"systemFingerprint"`
}

// aimockToolCall is a tool call of an aimock fixture.
type aimockToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// aimockEnvelope is a fixture response with the bench's answer envelope.
func aimockEnvelope(finish string) aimockResponse {
	created, _ := strconv.ParseInt(answerCreatedText, 10, 64)
	return aimockResponse{ID: chatAnswerID, Created: created, Model: answerModel, FinishReason: finish, SystemFingerprint: answerFingerprint}
}

// aimockTextFixtures are the fixtures of the 2 KB answers, matched by the
// user's question.
func aimockTextFixtures() []any {
	fixture := func(stream bool, content string, usage map[string]int) map[string]any {
		r := aimockEnvelope("stop")
		r.Content, r.Usage = content, usage
		return map[string]any{"match": map[string]string{"userMessage": userText(0, stream)}, "response": r}
	}
	return []any{
		fixture(false, jsonContent(chatAnswerID), map[string]int{"prompt_tokens": 92, "completion_tokens": 417, "total_tokens": 509}),
		fixture(true, sseContent(), nil),
	}
}

// runAimock writes fixtures into a fixture file in dir and starts aimock
// on port serving them.
func runAimock(npm, dir string, port int, fixtures []any) (*child, error) {
	b, err := json.Marshal(map[string]any{"fixtures": fixtures})
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "aimock-fixtures.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return nil, err
	}
	bin := filepath.Join(npm, "node_modules", ".bin", "llmock")
	return startPeer(nameAimock, dir, port, fmt.Sprintf("http://127.0.0.1:%d/health", port),
		bin, "-p", strconv.Itoa(port), "-h", "127.0.0.1", "-f", path, "-c", strconv.Itoa(sseChunk), "--log-level", "warn")
}

// startMountebank serves the two answers from one imposter, keep-alive on:
// a stub for bodies with "stream":true, another for the rest.
func startMountebank(npm, dir string, port int) (*child, error) {
	admin, err := freePort()
	if err != nil {
		return nil, err
	}
	headers := func(ct string) map[string]string {
		return map[string]string{"Content-Type": ct, "Connection": "keep-alive"}
	}
	stub := func(ct, body string, predicates []any) map[string]any {
		s := map[string]any{"responses": []any{map[string]any{"is": map[string]any{"statusCode": 200, "headers": headers(ct), "body": body}}}}
		if predicates != nil {
			s["predicates"] = predicates
		}
		return s
	}
	imp := map[string]any{"imposters": []any{map[string]any{
		"protocol": "http", "port": port, "host": "127.0.0.1", "recordRequests": false,
		// defaultResponse holds for unmatched requests only; each stub
		// says keep-alive too (mountebank's default is Connection: close).
		"defaultResponse": map[string]any{"statusCode": 404, "headers": map[string]string{"Connection": "keep-alive"}},
		"stubs": []any{
			stub("text/event-stream", string(bytes.Join(sseStream(), nil)), []any{map[string]any{"contains": map[string]string{"body": `"stream":true`}}}),
			stub("application/json", string(jsonResponse()), nil),
		},
	}}}
	b, err := json.Marshal(imp)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "mountebank-imposters.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return nil, err
	}
	bin := filepath.Join(npm, "node_modules", ".bin", "mb")
	return startPeer(nameMountebank, dir, port, fmt.Sprintf("http://127.0.0.1:%d/", port),
		bin, "start", "--port", strconv.Itoa(admin), "--host", "127.0.0.1", "--configfile", path, "--noParse",
		"--nologfile", "--loglevel", "warn", "--pidfile", filepath.Join(dir, "mb.pid"))
}

// startWireMock serves the two answers from two stub mappings with body
// files, on the standalone jar the npm package bundles, run by java
// directly (the package's launcher would only add a node process).
func startWireMock(npm, dir string, port int) (*child, error) {
	jars, _ := filepath.Glob(filepath.Join(npm, "node_modules", "wiremock", "build", "wiremock-standalone-*.jar"))
	if len(jars) != 1 {
		return nil, fmt.Errorf("%s: no single standalone jar in the npm package: %v", nameWireMock, jars)
	}
	root := filepath.Join(dir, "wiremock")
	for _, d := range []string{"mappings", "__files"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return nil, err
		}
	}
	files := map[string][]byte{"answer.json": jsonResponse(), "answer.sse": bytes.Join(sseStream(), nil)}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(root, "__files", name), body, 0o644); err != nil {
			return nil, err
		}
	}
	mapping := func(priority int, contains, ct, file string) map[string]any {
		return map[string]any{
			"priority": priority,
			"request":  map[string]any{"method": "POST", "url": chatPath, "bodyPatterns": []any{map[string]string{"contains": contains}}},
			"response": map[string]any{"status": 200, "headers": map[string]string{"Content-Type": ct}, "bodyFileName": file},
		}
	}
	for name, m := range map[string]map[string]any{
		"sse.json":  mapping(1, `"stream":true`, "text/event-stream", "answer.sse"),
		"json.json": mapping(2, `"stream":false`, "application/json", "answer.json"),
	} {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(root, "mappings", name), b, 0o644); err != nil {
			return nil, err
		}
	}
	return startPeer(nameWireMock, dir, port, fmt.Sprintf("http://127.0.0.1:%d/__admin/health", port),
		"java", "-jar", jars[0], "--port", strconv.Itoa(port), "--bind-address", "127.0.0.1", "--root-dir", root,
		"--disable-banner", "--disable-request-logging", "--max-request-journal-entries", "1000")
}
