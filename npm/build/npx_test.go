//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/internal/exampletest"
	"github.com/llmproxy/llmproxy/internal/fake"
)

// npxVersion is the version the test stamps: a prerelease, as npm orders
// it before any release.
const npxVersion = "v0.0.0-npxtest.1"

// weatherLoop is the conversation testdata/client.mjs has with the fake
// provider.
var weatherLoop = fake.ToolLoop{Tool: "weather", Args: `{"location":"Paris","unit":"celsius"}`, CallID: "call_npx", Answer: "It is sunny in Paris."}

// npxEnv is a machine with node and npm and no Go: tools is a folder that
// links node, npm and npx, env the environment whose PATH is tools and the
// folders of PATH that hold no go, with npm's cache in the test's folder
// and a registry nothing listens on.
type npxEnv struct {
	tools string
	env   []string
}

// newNpxEnv makes the environment, and checks that go is out of reach.
func newNpxEnv(t *testing.T) npxEnv {
	t.Helper()
	e := npxEnv{tools: t.TempDir()}
	for _, tool := range []string{"node", "npm", "npx"} {
		path, err := exec.LookPath(tool)
		if err != nil {
			exampletest.Skip(t, tool+" is not installed")
		}
		if err := os.Symlink(path, filepath.Join(e.tools, tool)); err != nil {
			t.Fatal(err)
		}
	}
	dirs := []string{e.tools}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir != "" && !executableIn(dir, "go") {
			dirs = append(dirs, dir)
		}
	}
	path := strings.Join(dirs, string(filepath.ListSeparator))
	for _, dir := range dirs {
		if executableIn(dir, "go") {
			t.Fatalf("go is reachable in %s on the stripped PATH %s", dir, path)
		}
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "PATH" || strings.HasPrefix(name, "LLMPROXY_") || strings.HasPrefix(name, "npm_") || strings.HasPrefix(name, "OPENAI_") {
			continue
		}
		e.env = append(e.env, kv)
	}
	e.env = append(e.env, "PATH="+path, "NO_COLOR=1",
		"npm_config_cache="+filepath.Join(t.TempDir(), "npm-cache"),
		"npm_config_registry=http://127.0.0.1:9/",
		"npm_config_update_notifier=false", "npm_config_audit=false", "npm_config_fund=false")
	return e
}

// executableIn reports whether dir holds an executable file name.
func executableIn(dir, name string) bool {
	fi, err := os.Stat(filepath.Join(dir, name))
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// command is name (node, npm or npx) with args, run in dir with the
// environment and extra variables.
func (e npxEnv) command(dir, name string, extra []string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(e.tools, name), args...)
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), e.env...), extra...)
	return cmd
}

// runCmd runs the command and returns its exit code and output; a command
// that cannot start fails the test.
func runCmd(t *testing.T, cmd *exec.Cmd) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// project makes an empty npm project and installs the tarballs into it
// offline, with no registry.
func (e npxEnv) project(t *testing.T, tarballs ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"npx-test","private":true}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"install", "--offline", "--no-audit", "--no-fund"}, tarballs...)
	if code, stdout, stderr := runCmd(t, e.command(dir, "npm", nil, args...)); code != 0 {
		t.Fatalf("npm %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
	}
	return dir
}

// TestNpxWithoutGo builds and packs this machine's packages with
// -version, installs both tarballs into an empty project offline, and
// with no go reachable runs `npx llmproxy version`, a record and a replay
// wrapped around a node client that asks OPENAI_BASE_URL with fetch, CMD's
// exit code, the launcher's signals, and the launcher's errors: no
// platform package, a platform without one, a bad LLMPROXY_BIN. The
// build's wheel, installed with pip, runs too.
func TestNpxWithoutGo(t *testing.T) {
	e := newNpxEnv(t)
	host, err := hostPlatform()
	if err != nil {
		t.Skip(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var log bytes.Buffer
	r, err := build(ctx, options{Root: root, Out: filepath.Join(t.TempDir(), "dist"), Version: npxVersion, Platforms: []platform{host}, Pack: true, Wheels: true, Log: &log})
	if err != nil {
		t.Fatalf("build: %v\n%s", err, log.String())
	}
	t.Logf("build:\n%s", log.String())
	proj := e.project(t, r.Tarballs["llmproxy"], r.Tarballs[host.npmName()])
	npx := func(extra []string, args ...string) (int, string, string) {
		return runCmd(t, e.command(proj, "npx", extra, append([]string{"--no", "llmproxy"}, args...)...))
	}

	t.Run("version", func(t *testing.T) {
		code, stdout, stderr := npx(nil, "version")
		if code != 0 || stdout != "llmproxy "+npxVersion+"\n" {
			t.Errorf("npx llmproxy version: exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout, stderr, "llmproxy "+npxVersion+"\n")
		}
	})

	client, err := filepath.Abs("testdata/client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	cas := filepath.Join(t.TempDir(), "weather.cassette")
	up := fake.New(t, fake.OpenAIChat(weatherLoop), fake.RequireHeader("Authorization", "Bearer sk-npx-test-key"))
	code, stdout, stderr := npx([]string{"OPENAI_API_KEY=sk-npx-test-key"}, "record", "--cassette", cas, "--upstream", up.URL(), "--", "node", client)
	if code != 0 || stdout != weatherLoop.Answer+"\n" || up.Hits() != 2 {
		t.Fatalf("npx llmproxy record -- node client.mjs: exit %d, %d requests upstream, stdout %q\nstderr:\n%s", code, up.Hits(), stdout, stderr)
	}
	up.Close()

	t.Run("replay", func(t *testing.T) {
		code, stdout, stderr := npx(nil, "replay", "--cassette", cas, "--fail-on-unused", "--", "node", client)
		if code != 0 || stdout != weatherLoop.Answer+"\n" {
			t.Errorf("npx llmproxy replay -- node client.mjs: exit %d, stdout %q; want 0 and the answer\nstderr:\n%s", code, stdout, stderr)
		}
		// A request the cassette does not hold: CMD succeeds, and the
		// proxy's exit 3 lists the miss.
		code, _, stderr = npx(nil, "replay", "--cassette", cas, "--", "node", "-e", `fetch(process.env.OPENAI_BASE_URL + "/models").then(r => process.exit(r.status === 400 ? 0 : 1))`)
		if code != 3 || !strings.Contains(stderr, "/models") {
			t.Errorf("a replay that missed: exit %d; want 3 with the miss on stderr:\n%s", code, stderr)
		}
	})

	t.Run("exit code", func(t *testing.T) {
		code, _, stderr := npx(nil, "replay", "--cassette", cas, "--", "node", "-e", "process.exit(7)")
		if code != 7 {
			t.Errorf("npx llmproxy replay -- node -e 'process.exit(7)': exit %d, want 7\n%s", code, stderr)
		}
	})

	launcher := filepath.Join(proj, "node_modules", ".bin", "llmproxy")
	t.Run("signals", func(t *testing.T) { testSignals(t, e, proj, launcher, cas) })

	t.Run("no platform package", func(t *testing.T) {
		bare := e.project(t, r.Tarballs["llmproxy"])
		code, stdout, stderr := runCmd(t, e.command(bare, "npx", nil, "--no", "llmproxy", "version"))
		for _, want := range []string{host.npmName(), host.OS + "-" + host.CPU, "LLMPROXY_BIN", "go install github.com/llmproxy/llmproxy/cmd/llmproxy@latest"} {
			if code != 1 || !strings.Contains(stderr, want) {
				t.Errorf("npx llmproxy version without %s: exit %d, stderr %q; want 1 naming %q", host.npmName(), code, stderr, want)
			}
		}
		// LLMPROXY_BIN stands in for the missing package.
		code, stdout, stderr = runCmd(t, e.command(bare, "npx", []string{"LLMPROXY_BIN=" + r.Binaries[host.String()]}, "--no", "llmproxy", "version"))
		if code != 0 || stdout != "llmproxy "+npxVersion+"\n" {
			t.Errorf("with LLMPROXY_BIN: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	})

	t.Run("bad launches", func(t *testing.T) { testBadLaunches(t, e, proj, launcher) })

	t.Run("wheel", func(t *testing.T) { testWheel(t, e, r.Wheels[host.String()]) })
}

// testWheel installs the wheel with Debian's pip, from the file alone, into
// a fresh prefix, and runs the llmproxy command it installed.
func testWheel(t *testing.T, e npxEnv, whl string) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-m", "pip", "--version").Run(); err != nil {
		exampletest.Skip(t, python+" -m pip does not run (apt-get install python3-pip): "+err.Error())
	}
	prefix := t.TempDir()
	cmd := exec.Command(python, "-m", "pip", "install", "--no-deps", "--prefix", prefix, whl)
	cmd.Env = append(append([]string(nil), e.env...), "PIP_NO_INDEX=1", "PIP_NO_CACHE_DIR=1", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_ROOT_USER_ACTION=ignore")
	if code, stdout, stderr := runCmd(t, cmd); code != 0 {
		t.Fatalf("pip install %s: exit %d\n%s%s", whl, code, stdout, stderr)
	}
	// Debian's pip puts scripts in PREFIX/local/bin, others in PREFIX/bin.
	var installed []string
	for _, dir := range []string{"bin", "local/bin"} {
		if executableIn(filepath.Join(prefix, dir), "llmproxy") {
			installed = append(installed, filepath.Join(prefix, dir, "llmproxy"))
		}
	}
	if len(installed) != 1 {
		t.Fatalf("pip installed the llmproxy command %d times in %s/{bin,local/bin}; want once", len(installed), prefix)
	}
	cmd = exec.Command(installed[0], "version")
	cmd.Env = e.env
	if code, stdout, stderr := runCmd(t, cmd); code != 0 || stdout != "llmproxy "+npxVersion+"\n" {
		t.Errorf("%s version: exit %d, stdout %q, stderr %q", installed[0], code, stdout, stderr)
	}
}

// testSignals checks that the launcher passes SIGINT, SIGTERM and SIGHUP on
// and ends as its binary ends, by signal too: with a script standing in for
// the binary, then with the binary serving a replay of cas, which SIGTERM
// shuts down cleanly.
func testSignals(t *testing.T, e npxEnv, proj, launcher, cas string) {
	script, err := filepath.Abs("testdata/signals.sh")
	if err != nil {
		t.Fatal(err)
	}
	bin := []string{"LLMPROXY_BIN=" + script}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGKILL} {
		cmd := e.command(proj, "node", bin, launcher, "die", strings.TrimPrefix(sigName(sig), "SIG"))
		err := cmd.Run()
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() || ws.Signal() != sig {
			t.Errorf("binary ended by %s: the launcher ended with %v (%v); want the same signal", sigName(sig), cmd.ProcessState, err)
		}
	}
	for sig, want := range map[syscall.Signal]int{syscall.SIGTERM: 42, syscall.SIGINT: 43, syscall.SIGHUP: 44} {
		cmd := e.command(proj, "node", bin, launcher, "trap")
		code, stdout := signalWhenReady(t, cmd, "ready", sig)
		if code != want || !strings.Contains(stdout, "got "+strings.TrimPrefix(sigName(sig), "SIG")) {
			t.Errorf("%s to the launcher: exit %d, stdout %q; want the binary to get it and exit %d", sigName(sig), code, stdout, want)
		}
	}
	cmd := e.command(proj, "node", nil, launcher, "replay", "--cassette", cas, "--listen", "127.0.0.1:0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if code, stdout := signalWhenReady(t, cmd, "llmproxy listening on http://127.0.0.1:", syscall.SIGTERM); code != 0 || !strings.Contains(stderr.String(), "shutting down") {
		t.Errorf("SIGTERM to a serving llmproxy through the launcher: exit %d; want 0 after a clean shutdown\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr.String())
	}
}

// sigName is the signal's name as node and kill(1) spell it.
func sigName(s syscall.Signal) string {
	return map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT", syscall.SIGKILL: "SIGKILL", syscall.SIGHUP: "SIGHUP"}[s]
}

// signalWhenReady starts cmd in a process group of its own, waits for a
// line of its stdout that starts with ready, sends sig to cmd alone, and
// returns its exit code and whole stdout. A command that ends before it is
// ready fails the test, and so does one that has not ended a minute after
// the signal (a launcher that keeps the signal to itself): its group is
// killed then, so that nothing is left running.
func signalWhenReady(t *testing.T, cmd *exec.Cmd, ready string, sig syscall.Signal) (int, string) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	lines := bufio.NewScanner(pipe)
	var stuck *time.Timer
	for lines.Scan() {
		out.WriteString(lines.Text() + "\n")
		if stuck == nil && strings.HasPrefix(lines.Text(), ready) {
			stuck = time.AfterFunc(time.Minute, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
		}
	}
	_ = cmd.Wait()
	if stuck == nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("%s ended before it printed %q: %v\n%s", strings.Join(cmd.Args, " "), ready, cmd.ProcessState, out.String())
	}
	if !stuck.Stop() {
		t.Fatalf("%s did not end within a minute of %s: killed\n%s", strings.Join(cmd.Args, " "), sigName(sig), out.String())
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// testBadLaunches checks the launcher's errors: a platform that has no
// package, LLMPROXY_BIN naming nothing or the launcher itself.
func testBadLaunches(t *testing.T, e npxEnv, proj, launcher string) {
	for _, tc := range []struct {
		name  string
		extra []string
		args  []string
		want  string
	}{
		{"no package for the platform", nil,
			[]string{"-e", "Object.defineProperty(process, 'platform', {value: 'aix'}); require(process.argv[1])", launcher},
			"no prebuilt binary for aix-"},
		{"LLMPROXY_BIN names nothing", []string{"LLMPROXY_BIN=" + filepath.Join(proj, "nothing")},
			[]string{launcher, "version"}, "cannot run " + filepath.Join(proj, "nothing")},
		{"LLMPROXY_BIN names the launcher", []string{"LLMPROXY_BIN=" + launcher},
			[]string{launcher, "version"}, "names this npm launcher"},
	} {
		code, _, stderr := runCmd(t, e.command(proj, "node", tc.extra, tc.args...))
		if code != 1 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want 1 and one line with %q", tc.name, code, stderr, tc.want)
		}
	}
}
