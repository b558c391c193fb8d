package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/llmproxy/llmproxy/internal/exampletest"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childRole names the environment variable that makes the test binary act
// as CMD of a wrapper test instead of running the tests; its value says
// what CMD does (see actAsChild).
const childRole = "WRAPPER_TEST_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childRole); role != "" {
		os.Exit(actAsChild(role))
	}
	// A -- CMD run writes its report under the temporary directory: the
	// tests' own, removed at the end.
	tmp, err := os.MkdirTemp("", "llmproxy-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", tmp)
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

// sdkVars are the variables the wrapper sets or keeps for CMD.
var sdkVars = []string{"LLMPROXY_URL", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "OLLAMA_HOST",
	"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"}

// hitBody is the request of interaction 1 of sampleCassette; missBody is
// like it but for one word.
const (
	hitBody  = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"question 0 MARKER"}]}`
	missBody = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"question 0 OTHER"}]}`
)

// actAsChild is CMD of the wrapper tests. role is one of:
//
//	env       print sdkVars as JSON (null when unset)
//	exit=N    exit with status N
//	kill      end by SIGKILL
//	post=BODY POST BODY to $OPENAI_BASE_URL/chat/completions, print the status, exit 0
//	postpath=PATH|BODY  POST BODY to $LLMPROXY_URL PATH, print the status, exit 0
//	term      print "ready", wait for SIGTERM, check the proxy still answers, exit 7
//	refresh=PROMPT  run the refresh tests' agent (refreshAgent) with PROMPT as its turn-2 prompt
func actAsChild(role string) int {
	name, arg, _ := strings.Cut(role, "=")
	switch name {
	case "env":
		vars := map[string]*string{}
		for _, k := range sdkVars {
			if v, ok := os.LookupEnv(k); ok {
				vars[k] = &v
			}
		}
		b, _ := json.Marshal(vars)
		fmt.Println(string(b))
		return 0
	case "exit":
		n, _ := strconv.Atoi(arg)
		return n
	case "kill":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(10 * time.Second)
		return 0
	case "post":
		resp, err := http.Post(os.Getenv("OPENAI_BASE_URL")+"/chat/completions", "application/json", strings.NewReader(arg))
		if err != nil {
			fmt.Println("post:", err)
			return 1
		}
		resp.Body.Close()
		fmt.Println("status", resp.StatusCode)
		return 0
	case "postpath":
		path, body, _ := strings.Cut(arg, "|")
		resp, err := http.Post(os.Getenv("LLMPROXY_URL")+path, "application/json", strings.NewReader(body))
		if err != nil {
			fmt.Println("post:", err)
			return 1
		}
		// The whole answer is read: one left unread counts as not
		// delivered, and its interaction as not served.
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Println("status", resp.StatusCode)
		return 0
	case "refresh":
		answer, err := refreshAgent(context.Background(), os.Getenv("LLMPROXY_URL"), "Plan my trip to Lyon.", arg)
		if err != nil {
			fmt.Println("agent:", err)
			return 1
		}
		fmt.Println(answer)
		return 0
	case "term":
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM)
		fmt.Println("ready")
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
			fmt.Println("no SIGTERM")
			return 1
		}
		resp, err := http.Get(os.Getenv("LLMPROXY_URL") + "/_llmproxy/health")
		if err != nil {
			fmt.Println("after SIGTERM:", err)
			return 1
		}
		resp.Body.Close()
		fmt.Println("got SIGTERM; proxy answered", resp.StatusCode)
		return 7
	}
	if code, ok := actAsMCPServer(name, arg); ok {
		return code
	}
	fmt.Fprintln(os.Stderr, "unknown child role", role)
	return 99
}

// self is the path of the test binary, run again as CMD.
func self(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// listeningURL is the proxy's URL from the listening line in stderr.
func listeningURL(t *testing.T, stderr string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^llmproxy listening on (http://127\.0\.0\.1:\d+)$`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no listening line on stderr:\n%s", stderr)
	}
	return m[1]
}

func TestSDKEnv(t *testing.T) {
	const base = "http://127.0.0.1:5555"
	urls := []string{"LLMPROXY_URL=" + base, "OPENAI_BASE_URL=" + base + "/v1", "ANTHROPIC_BASE_URL=" + base + "/anthropic",
		"GOOGLE_GEMINI_BASE_URL=" + base + "/gemini", "OLLAMA_HOST=" + base + "/ollama"}
	tests := []struct {
		name         string
		environ      []string
		placeholders bool
		want         []string // sorted
	}{
		{"empty record", nil, false, urls},
		{"empty replay", nil, true, append(slices.Clone(urls),
			"OPENAI_API_KEY="+placeholderKey, "ANTHROPIC_API_KEY="+placeholderKey, "GEMINI_API_KEY="+placeholderKey)},
		{"base URLs replaced, keys kept, empty key filled",
			[]string{"PATH=/bin", "OPENAI_BASE_URL=https://api.example.com/v1", "OPENAI_BASE_URL=https://twice.example.com",
				"OLLAMA_HOST=localhost:11434", "OPENAI_API_KEY=sk-parent", "GEMINI_API_KEY=", "ANTHROPIC_API_KEY=sk-ant"},
			true, append(slices.Clone(urls), "PATH=/bin", "OPENAI_API_KEY=sk-parent", "ANTHROPIC_API_KEY=sk-ant",
				"GEMINI_API_KEY="+placeholderKey)},
		{"record keeps an empty key", []string{"GEMINI_API_KEY="}, false, append(slices.Clone(urls), "GEMINI_API_KEY=")},
		{"the admin token is dropped", []string{"LLMPROXY_ADMIN_TOKEN=secret", "LLMPROXY_CASSETTE=c"}, false, append(slices.Clone(urls), "LLMPROXY_CASSETTE=c")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sdkEnv(tt.environ, base, tt.placeholders)
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, want) {
				t.Errorf("sdkEnv:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// TestWrapperEnvironment runs CMD under each mode and reads back the
// environment it got: the proxy's URLs on a free port, placeholder keys
// only in replay and only where the parent has none, a parent's key kept
// and a parent's base URL replaced. CMD's stdout is its own; the listening
// line is on stderr.
func TestWrapperEnvironment(t *testing.T) {
	t.Setenv(childRole, "env")
	t.Setenv("OPENAI_BASE_URL", "https://api.example.com/v1")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-parent")
	t.Setenv("GEMINI_API_KEY", "")
	exampletest.Unsetenv(t, "OPENAI_API_KEY")
	exampletest.Unsetenv(t, "LLMPROXY_LISTEN")
	dir := t.TempDir()
	sampleCassette(t, filepath.Join(dir, "replay.cassette"), 1)
	for _, mode := range []string{"replay", "record", "auto"} {
		t.Run(mode, func(t *testing.T) {
			code, stdout, stderr := cli(t, mode, "--cassette", filepath.Join(dir, mode+".cassette"), "--", self(t))
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			base := listeningURL(t, stderr)
			if strings.HasSuffix(base, ":7878") {
				t.Errorf("listening on the default port, not a free one: %s", base)
			}
			var got map[string]*string
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("CMD's stdout is not its JSON alone: %v\n%q", err, stdout)
			}
			want := map[string]string{
				"LLMPROXY_URL": base, "OPENAI_BASE_URL": base + "/v1", "ANTHROPIC_BASE_URL": base + "/anthropic",
				"GOOGLE_GEMINI_BASE_URL": base + "/gemini", "OLLAMA_HOST": base + "/ollama", "ANTHROPIC_API_KEY": "sk-ant-parent",
			}
			if mode == "replay" {
				want["OPENAI_API_KEY"] = placeholderKey
				want["GEMINI_API_KEY"] = placeholderKey
			} else {
				want["GEMINI_API_KEY"] = ""
			}
			for _, k := range sdkVars {
				w, set := want[k]
				switch g := got[k]; {
				case !set && g != nil:
					t.Errorf("%s = %q, want it unset", k, *g)
				case set && g == nil:
					t.Errorf("%s unset, want %q", k, w)
				case set && *g != w:
					t.Errorf("%s = %q, want %q", k, *g, w)
				}
			}
		})
	}
}

// TestWrapperExitStatus: llmproxy exits with CMD's status, 3 when CMD
// passed but a request missed or (--fail-on-unused) something was never
// used, 1 naming CMD when it cannot start, 2 when -- has no command.
func TestWrapperExitStatus(t *testing.T) {
	exampletest.Unsetenv(t, "LLMPROXY_LISTEN")
	cas := filepath.Join(t.TempDir(), "three.cassette")
	sampleCassette(t, cas, 3)
	tests := []struct {
		name     string
		role     string
		flags    []string
		cmd      []string // default: the test binary
		code     int
		stderr   []string // in stderr, in this order
		noStderr []string
	}{
		{"pass", "exit=0", nil, nil, 0, nil, []string{"exited"}},
		{"fail", "exit=5", nil, nil, 5, []string{"exited with status 5"}, nil},
		{"killed", "kill", nil, nil, 128 + 9, []string{"exited with status 137"}, nil},
		{"hit", "post=" + hitBody, nil, nil, 0, nil, []string{"missed"}},
		{"miss", "post=" + missBody, nil, nil, 3, []string{"exited with status 0, but 1 request(s) missed:",
			"has no recording of this request (POST /v1/chat/completions); closest is interaction 1", "messages.0.content"}, nil},
		{"miss and fail", "post=" + missBody + "", nil, []string{"sh", "-c", `"$0" && exit 4`}, 4,
			[]string{"sh exited with status 4; 1 request(s) missed:", "closest is interaction 1"}, nil},
		{"unused", "post=" + hitBody, []string{"--fail-on-unused"}, nil, 3,
			[]string{"exited with status 0, but --fail-on-unused: 2 interaction(s) never served:", "interaction 2 POST", "interaction 3 POST"}, nil},
		{"all used", "exit=0", []string{"--fail-on-unused"}, []string{"sh", "-c", `for b in 0 1 2; do WRAPPER_TEST_CHILD="post={\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":\"user\",\"content\":\"question $b MARKER\"}]}" "$0" || exit 1; done`}, 0, nil, []string{"never served", "missed"}},
		{"cannot start", "exit=0", nil, []string{"/nonexistent/llmproxy-test-cmd", "arg"}, 1,
			[]string{"llmproxy: cannot start /nonexistent/llmproxy-test-cmd:"}, nil},
		{"not on PATH", "exit=0", nil, []string{"llmproxy-no-such-command"}, 1,
			[]string{`llmproxy: cannot start llmproxy-no-such-command: exec: "llmproxy-no-such-command": executable file not found`}, nil},
		{"no command", "exit=0", nil, []string{}, 2, []string{"-- must be followed by the command to run"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(childRole, tt.role)
			cmd := tt.cmd
			if cmd == nil {
				cmd = []string{self(t)}
			} else if len(cmd) > 0 && cmd[0] == "sh" {
				cmd = append(slices.Clone(cmd), self(t))
			}
			args := append([]string{"replay", "--cassette", cas}, tt.flags...)
			code, _, stderr := cli(t, append(append(args, "--"), cmd...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, stderr)
			}
			rest := stderr
			for _, s := range tt.stderr {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Errorf("stderr lacks %q (in order):\n%s", s, stderr)
					break
				}
				rest = rest[i+len(s):]
			}
			for _, s := range tt.noStderr {
				if strings.Contains(stderr, s) {
					t.Errorf("stderr holds %q:\n%s", s, stderr)
				}
			}
			if strings.Contains(stderr, "panic") {
				t.Errorf("stderr holds a panic:\n%s", stderr)
			}
		})
	}
}

// TestWrapperForwardsSignals: a SIGTERM to llmproxy goes to CMD, the proxy
// still answers CMD while it handles it, and llmproxy exits after CMD, with
// CMD's status.
func TestWrapperForwardsSignals(t *testing.T) {
	t.Setenv(childRole, "term")
	exampletest.Unsetenv(t, "LLMPROXY_LISTEN")
	cas := filepath.Join(t.TempDir(), "one.cassette")
	sampleCassette(t, cas, 1)
	sigs := make(chan os.Signal, 1)
	fakeSignals := func() (<-chan os.Signal, func()) { return sigs, func() {} }
	stdout, stderr := &procOutput{}, &procOutput{}
	done := make(chan error, 1)
	go func() {
		done <- runServe(context.Background(), "replay", []string{"--cassette", cas, "--", self(t)}, stdout, stderr, fakeSignals)
	}()
	waitFor(t, stdout, "ready\n", done)
	sigs <- syscall.SIGTERM
	select {
	case err := <-done:
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 7 {
			t.Fatalf("runServe: %v, want CMD's exit status 7\nstderr: %s", err, stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("llmproxy did not exit after CMD")
	}
	if got, want := stdout.String(), "ready\ngot SIGTERM; proxy answered 200\n"; got != want {
		t.Errorf("CMD's stdout %q, want %q", got, want)
	}
}

// TestWrapperSignalProcess is TestWrapperForwardsSignals with a real
// llmproxy process and a real SIGTERM.
func TestWrapperSignalProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := exampletest.BuildLLMProxy(t)
	cas := filepath.Join(t.TempDir(), "one.cassette")
	sampleCassette(t, cas, 1)
	cmd := exec.Command(bin, "replay", "--cassette", cas, "--", self(t))
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "LLMPROXY_LISTEN=") }),
		childRole+"=term")
	stdout, stderr := &procOutput{}, &procOutput{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	waitFor(t, stdout, "ready\n", done)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("llmproxy did not exit after CMD")
	}
	if code := cmd.ProcessState.ExitCode(); code != 7 {
		t.Errorf("exit %d, want CMD's 7\nstderr: %s", code, stderr)
	}
	if got, want := stdout.String(), "ready\ngot SIGTERM; proxy answered 200\n"; got != want {
		t.Errorf("stdout %q, want CMD's alone, %q\nstderr: %s", got, want, stderr)
	}
	if !strings.HasPrefix(stderr.String(), "llmproxy listening on http://127.0.0.1:") {
		t.Errorf("stderr does not start with the listening line:\n%s", stderr)
	}
}

// waitFor waits until out holds want, for 20 s at most, failing if done
// reports first.
func waitFor(t *testing.T, out interface{ String() string }, want string, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), want) {
		select {
		case err := <-done:
			t.Fatalf("exited before printing %q: %v\noutput so far: %q", want, err, out.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q after 20 s; got %q", want, out.String())
		}
	}
}

var _ io.Writer = (*procOutput)(nil)
