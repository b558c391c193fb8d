package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/exampletest"
	"github.com/llmproxy/llmproxy/internal/fake"
)

// crashLoop is the conversation the fake upstreams of the process tests play.
var crashLoop = fake.ToolLoop{Tool: "weather", Args: `{"location":"Paris"}`, CallID: "call_weather", Answer: "Sunny."}

// procOutput collects a child's stderr.
type procOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *procOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *procOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// proc is a running llmproxy process.
type proc struct {
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:PORT once it listens
	stderr *procOutput
	exited chan struct{}
	code   int // after exited: the exit code, -1 when killed by a signal
}

// startProc starts llmproxy with args. When listen is set it waits (10 s
// at most) for the first stdout line, which must be the listening line.
func startProc(t *testing.T, bin string, listen bool, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), stderr: &procOutput{}, exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "LLMPROXY_CASSETTE=", "LLMPROXY_LISTEN=")
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- line
		io.Copy(io.Discard, r)
	}()
	go func() {
		err := p.cmd.Wait()
		p.code = 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			p.code = ee.ExitCode()
		}
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	if !listen {
		return p
	}
	select {
	case line := <-lines:
		const prefix = "llmproxy listening on "
		if !strings.HasPrefix(line, prefix) || !strings.HasSuffix(line, "\n") {
			<-p.exited
			t.Fatalf("llmproxy %s: first stdout line %q, want %q…; stderr:\n%s", strings.Join(args, " "), line, prefix, p.stderr)
		}
		p.base = strings.TrimSpace(strings.TrimPrefix(line, prefix))
	case <-time.After(10 * time.Second):
		t.Fatalf("llmproxy %s: no listening line within 10 s; stderr:\n%s", strings.Join(args, " "), p.stderr)
	}
	return p
}

// wait waits (10 s at most) for the process to end and returns its code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
		return p.code
	case <-time.After(10 * time.Second):
		t.Fatalf("llmproxy still running after 10 s; stderr:\n%s", p.stderr)
		return 0
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != -1 {
		t.Fatalf("after SIGKILL the exit code is %d, want -1 (killed)", code)
	}
}

// exchange is one request the process tests sent and what came back.
type exchange struct {
	path, body string
	answer     []byte
}

func crashChat(prompt string, stream bool) string {
	return fmt.Sprintf(`{"model":"gpt-4o-mini","stream":%v,"messages":[{"role":"user","content":%q}]}`, stream, prompt)
}

// post sends a request and reads the whole answer, which must be a 200.
func post(t *testing.T, base, path, body string) []byte {
	t.Helper()
	resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST %s: %d %v %s", path, resp.StatusCode, err, b)
	}
	return b
}

// recordedCount is the number of log entries of this process that wrote an
// interaction: the acknowledgement that it is committed.
func recordedCount(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/_llmproxy/log")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return int(gjson.GetBytes(b, `entries.#(interaction>0)#`).Get("#").Int())
}

// waitRecorded waits (10 s at most) until n interactions are acknowledged.
func waitRecorded(t *testing.T, base string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for recordedCount(t, base) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d interactions acknowledged after 10 s, want %d", recordedCount(t, base), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkIntact opens the cassette after a crash: bbolt opens it for writing
// (which runs the full consistency check), it exports, and it holds exactly
// the exchanges given, in order, with the bytes the clients received.
func checkIntact(t *testing.T, path string, want []exchange) []*cassette.Interaction {
	t.Helper()
	w, err := cassette.Open(path, cassette.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("after the crash the cassette does not open for writing: %v", err)
	}
	w.Close()
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Export(io.Discard); err != nil {
		t.Fatalf("after the crash the cassette does not export: %v", err)
	}
	all, err := c.All()
	if err != nil {
		t.Fatal(err)
	}
	if want != nil {
		if len(all) != len(want) {
			t.Fatalf("the cassette holds %d interactions, want %d", len(all), len(want))
		}
		for i, x := range want {
			got := all[i]
			if string(got.Request.Body) != x.body || !bytes.Equal(got.Response.Bytes(), x.answer) {
				t.Errorf("interaction %d: request %s answered %q, want request %s answered %q", got.ID, got.Request.Body, got.Response.Bytes(), x.body, x.answer)
			}
		}
	}
	return all
}

// TestProcesses runs real llmproxy processes: record killed mid-stream,
// record killed under load, a second writer, and four replayers at once.
func TestProcesses(t *testing.T) {
	bin := exampletest.BuildLLMProxy(t)
	t.Run("crash", func(t *testing.T) { t.Parallel(); testCrash(t, bin) })
	t.Run("second writer", func(t *testing.T) { t.Parallel(); testSecondWriter(t, bin) })
	t.Run("write-behind window", func(t *testing.T) { t.Parallel(); testWriteBehindWindow(t, bin) })
	t.Run("sigterm after listening", func(t *testing.T) { t.Parallel(); testSigtermAfterListening(t, bin) })
	t.Run("mock in two processes", func(t *testing.T) { t.Parallel(); testMockTwoProcesses(t, bin) })
	t.Run("prune killed", func(t *testing.T) { t.Parallel(); testPruneKilled(t, bin) })
}

// testSigtermAfterListening: a SIGTERM sent the moment the listening line is
// read is a clean shutdown with exit 0, every time. The signal handlers must
// be in place before the line is printed; if they are not, the default
// action of SIGTERM ends the process now and then.
func testSigtermAfterListening(t *testing.T, bin string) {
	path := demoCopy(t)
	const runs = 40
	for i := range runs {
		p := startProc(t, bin, true, "replay", "--cassette", path, "--listen", "127.0.0.1:0")
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t); code != 0 {
			t.Fatalf("run %d of %d: SIGTERM right after the listening line gave exit %d (-1: killed by the signal), want 0; stderr:\n%s", i+1, runs, code, p.stderr)
		}
	}
}

// testCrash: each round starts `llmproxy record`, completes n interactions
// through it, then SIGKILLs it while interaction n+1, a slow stream, is
// half delivered. The cassette must hold exactly the completed
// interactions, intact. A last round kills it under concurrent load. Then
// four replay processes serve the cassette at once.
func testCrash(t *testing.T, bin string) {
	fast := fake.New(t, fake.OpenAIChat(crashLoop))
	slow := fake.New(t, fake.OpenAIChat(crashLoop), fake.EventDelay(200*time.Millisecond))
	path := filepath.Join(t.TempDir(), "crash.cassette")
	const rounds, n = 3, 4
	var kept []exchange
	for round := range rounds {
		p := startProc(t, bin, true, "record", "--cassette", path, "--listen", "127.0.0.1:0",
			"--upstream", fast.URL(), "--upstream", "slow="+slow.URL())
		for i := range n {
			body := crashChat(fmt.Sprintf("round %d, question %d", round, i), i%2 == 1)
			kept = append(kept, exchange{"/v1/chat/completions", body, post(t, p.base, "/v1/chat/completions", body)})
		}
		waitRecorded(t, p.base, n)

		// Interaction n+1: a slow stream, killed after its first event.
		resp, err := http.Post(p.base+"/slow/v1/chat/completions", "application/json",
			strings.NewReader(crashChat(fmt.Sprintf("round %d, the one that dies", round), true)))
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(resp.Body)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the first event: %v", err)
			}
			if line == "\n" {
				break
			}
		}
		p.kill(t)
		if rest, err := io.ReadAll(r); err == nil {
			t.Errorf("the client of the killed stream saw a clean end after %q", rest)
		}
		resp.Body.Close()
		checkIntact(t, path, kept)
	}
	if slow.Hits() != rounds {
		t.Errorf("the slow upstream got %d requests, want %d", slow.Hits(), rounds)
	}

	// Under load: four clients send 24 requests; the process dies once 6
	// are acknowledged. What was acknowledged is there; what is there is whole.
	p := startProc(t, bin, true, "record", "--cassette", path, "--listen", "127.0.0.1:0", "--upstream", fast.URL())
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 6 {
				body := crashChat(fmt.Sprintf("load %d.%d", w, i), i%2 == 0)
				resp, err := http.Post(p.base+"/v1/chat/completions", "application/json", strings.NewReader(body))
				if err != nil {
					return // the process is gone
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	waitRecorded(t, p.base, 6)
	acked := recordedCount(t, p.base)
	p.kill(t)
	wg.Wait()
	all := checkIntact(t, path, nil)
	stored := len(all) - len(kept)
	if stored < acked || stored > 24 {
		t.Errorf("under load: %d acknowledged, %d stored; want acknowledged ≤ stored ≤ 24", acked, stored)
	}
	for _, i := range all[len(kept):] {
		b := i.Response.Bytes()
		complete := gjson.ValidBytes(b)
		if i.Response.Streamed() {
			complete = bytes.HasSuffix(b, []byte("data: [DONE]\n\n"))
		}
		if i.Response.Status != 200 || !complete {
			t.Errorf("interaction %d stored after the crash is not a complete response: %d %q", i.ID, i.Response.Status, b)
		}
	}
	t.Logf("crash: %d SIGKILLs (%d mid-stream, 1 under load); interactions acknowledged before a kill: %d, found after it: %d, lost: %d; under load %d acknowledged, %d stored, each whole",
		rounds+1, rounds, len(kept)+acked, len(kept)+stored, max(0, acked-stored), acked, stored)

	testReplayers(t, bin, path, kept)
}

// testReplayers starts four replay processes on one cassette at once; each
// serves every recorded exchange byte for byte, a writer meanwhile is
// refused, and each stops cleanly on SIGTERM.
func testReplayers(t *testing.T, bin, path string, kept []exchange) {
	const k = 4
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	procs := make([]*proc, k)
	for i := range procs {
		procs[i] = startProc(t, bin, true, "replay", "--cassette", path, "--listen", "127.0.0.1:0")
	}
	var wg sync.WaitGroup
	served := make([]int, k)
	for i, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, x := range kept {
				resp, err := http.Post(p.base+x.path, "application/json", strings.NewReader(x.body))
				if err != nil {
					t.Errorf("replayer %d: %v", i, err)
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 || !bytes.Equal(b, x.answer) {
					t.Errorf("replayer %d: %d %v %q, want the recorded %q", i, resp.StatusCode, err, b, x.answer)
					return
				}
				served[i]++
			}
		}()
	}
	// Meanwhile a writer is refused, naming the file; a reader is not.
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"record", "--cassette", path, "--listen", "127.0.0.1:0", "--lock-timeout", "300ms"}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), path) || !strings.Contains(errb.String(), "another process holds it") {
		t.Errorf("a writer while %d replayers run: exit %d, stderr %q", k, code, errb.String())
	}
	if code := run(context.Background(), []string{"export", "--cassette", path}, io.Discard, &errb); code != 0 {
		t.Errorf("export while %d replayers run: exit %d: %s", k, code, errb.String())
	}
	wg.Wait()
	for i, p := range procs {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t); code != 0 {
			t.Errorf("replayer %d exited %d after SIGTERM: %s", i, code, p.stderr)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("replaying changed the cassette file")
	}
	total := 0
	for _, n := range served {
		total += n
	}
	t.Logf("replayers: %d processes on one cassette at once served %d of %d exchanges byte for byte", k, total, k*len(kept))
}

// testSecondWriter: while `llmproxy record` holds a cassette, a second
// `llmproxy record` (default --lock-timeout) and an `import --force` on it
// fail within 10 s with exit 1, naming the file and the reason, and change
// nothing.
func testSecondWriter(t *testing.T, bin string) {
	up := fake.New(t, fake.OpenAIChat(crashLoop))
	dir := t.TempDir()
	path := filepath.Join(dir, "held.cassette")
	// An export to import later: bbolt's lock keeps readers out while a
	// writer holds the file, so it comes from another cassette.
	other := filepath.Join(dir, "other.cassette")
	c, err := cassette.Open(other, cassette.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	export := filepath.Join(dir, "export.json")
	if code := run(context.Background(), []string{"export", "--cassette", other, "--out", export}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("export: exit %d", code)
	}

	first := startProc(t, bin, true, "record", "--cassette", path, "--listen", "127.0.0.1:0", "--upstream", up.URL())
	post(t, first.base, "/v1/chat/completions", crashChat("hold it", false))
	waitRecorded(t, first.base, 1)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, args := range [][]string{
		{"record", "--cassette", path, "--listen", "127.0.0.1:0", "--upstream", up.URL()},
		{"auto", "--cassette", path, "--listen", "127.0.0.1:0", "--upstream", up.URL()},
		{"import", "--in", export, "--cassette", path, "--force"},
		{"replay", "--cassette", path, "--listen", "127.0.0.1:0"},
		{"export", "--cassette", path},
	} {
		second := startProc(t, bin, false, args...)
		start := time.Now()
		wg.Add(1)
		go func() {
			defer wg.Done()
			code := second.wait(t)
			took := time.Since(start)
			msg := second.stderr.String()
			if code != 1 || !strings.Contains(msg, path) || !strings.Contains(msg, "another process holds it") {
				t.Errorf("llmproxy %s: exit %d, stderr %q; want 1 naming %s and saying another process holds it", args[0], code, msg, path)
			}
			if strings.Count(msg, "\n") != 1 || strings.Contains(msg, "goroutine ") {
				t.Errorf("llmproxy %s: stderr is not one line: %q", args[0], msg)
			}
			if took > 10*time.Second {
				t.Errorf("llmproxy %s: failed after %s, want within 10 s", args[0], took)
			}
			t.Logf("while another process records: llmproxy %s exits %d after %s: %s", args[0], code, took.Round(100*time.Millisecond), strings.TrimSpace(msg))
		}()
	}
	wg.Wait()
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("the refused processes changed the cassette")
	}
	// The first writer still records.
	post(t, first.base, "/v1/chat/completions", crashChat("still here", true))
	waitRecorded(t, first.base, 2)
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := first.wait(t); code != 0 {
		t.Errorf("the first writer exited %d after SIGTERM: %s", code, first.stderr)
	}
}

// testWriteBehindWindow measures what a kill -9 loses of the responses
// clients received whole: a slow stream is under way while 8 clients each
// complete 3 short exchanges, whose interactions are written behind the
// stream's (in arrival order); then the process is killed. Without --sync
// the window is logged; with --sync nothing received whole may be lost.
func testWriteBehindWindow(t *testing.T, bin string) {
	fast := fake.New(t, fake.OpenAIChat(crashLoop))
	slow := fake.New(t, fake.OpenAIChat(crashLoop), fake.EventDelay(time.Second))
	for _, syncOn := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "window.cassette")
		args := []string{"record", "--cassette", path, "--listen", "127.0.0.1:0", "--upstream", fast.URL(), "--upstream", "slow=" + slow.URL()}
		if syncOn {
			args = append(args, "--sync")
		}
		p := startProc(t, bin, true, args...)
		resp, err := http.Post(p.base+"/slow/v1/chat/completions", "application/json", strings.NewReader(crashChat("the long one", true)))
		if err != nil {
			t.Fatal(err)
		}
		var completed atomic.Int64
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 3 {
					body := crashChat(fmt.Sprintf("short %d.%d", w, i), i%2 == 0)
					r, err := http.Post(p.base+"/v1/chat/completions", "application/json", strings.NewReader(body))
					if err != nil {
						return
					}
					_, err = io.ReadAll(r.Body)
					r.Body.Close()
					if err == nil && r.StatusCode == 200 {
						completed.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		p.kill(t)
		resp.Body.Close()
		stored := len(checkIntact(t, path, nil))
		lost := int(completed.Load()) - stored
		t.Logf("write-behind window (--sync %v): 8 clients completed %d short exchanges behind a long stream; after kill -9 %d stored, %d lost",
			syncOn, completed.Load(), stored, lost)
		if completed.Load() != 24 {
			t.Errorf("--sync %v: %d of 24 short exchanges completed before the kill", syncOn, completed.Load())
		}
		if syncOn && lost > 0 {
			t.Errorf("with --sync a kill -9 lost %d interactions whose responses were received whole", lost)
		}
	}
}
