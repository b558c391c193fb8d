package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// This file is the `-- CMD [ARG]...` form of the serving commands: the proxy
// serves on a free loopback port while CMD runs with its environment pointing
// the common SDKs at it, and llmproxy exits when CMD does, with CMD's status.

// placeholderKey is the API key CMD gets in replay and mock for each provider
// key its environment lacks, so that SDKs which refuse to start without a key
// start. No provider accepts it, and it never reaches one.
const placeholderKey = "llmproxy-placeholder-key"

// freeLoopback is where the proxy listens for CMD unless --listen is given.
const freeLoopback = "127.0.0.1:0"

// maxListedMisses bounds the misses kept for the final report; the rest are
// only counted.
const maxListedMisses = 20

// DefaultKillGrace is how long CMD has to exit after llmproxy passed it a
// signal, before its process group is killed (--kill-grace).
const DefaultKillGrace = 10 * time.Second

// cmdWaitDelay bounds the wait for CMD's output once CMD has exited, when a
// child of CMD still holds it open.
const cmdWaitDelay = 2 * time.Second

// commandRun is CMD of a serving command's `-- CMD [ARG]...` form, and the
// misses the proxy reports while it runs.
type commandRun struct {
	argv []string
	// placeholders gives CMD placeholder API keys where its environment
	// has none: in replay and mock, where no request reaches a provider.
	placeholders bool
	// grace is how long CMD has after a signal before it is killed
	// (--kill-grace).
	grace time.Duration
	// log collects the misses and the requests that failed upstream.
	log runLog
}

// splitCommand cuts the arguments of serving command name (record, replay,
// auto or mock) at the first "--": the command's own flags before it, CMD
// and its arguments after it. The commandRun is nil when there is no "--".
func splitCommand(name string, args []string) ([]string, *commandRun, error) {
	i := slices.Index(args, "--")
	if i < 0 {
		return args, nil, nil
	}
	if i == len(args)-1 {
		return nil, nil, usagef("llmproxy %s: -- must be followed by the command to run", name)
	}
	cr := &commandRun{argv: slices.Clone(args[i+1:]), placeholders: name == "replay" || name == "mock"}
	return args[:i], cr, nil
}

// listen is the address to serve CMD on: addr when --listen (or its
// environment variable) was given, else a free loopback port.
func (cr *commandRun) listen(fs *flag.FlagSet, addr string) string {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "listen" })
	if given {
		return addr
	}
	return freeLoopback
}

// sdkEnv returns environ with the variables that point the common SDKs at
// the proxy at base (http://HOST:PORT). The proxy's URL and the base URLs
// replace whatever environ has; with placeholders, each provider API key
// that environ lacks or has empty is set to placeholderKey, and a key
// environ has is kept.
func sdkEnv(environ []string, base string, placeholders bool) []string {
	// The admin token guards the proxy's API against everyone but its
	// user; CMD reaches the API through the loopback rules, token-free.
	environ = slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		return strings.HasPrefix(kv, envName("admin-token")+"=")
	})
	set := [][2]string{
		{"LLMPROXY_URL", base},
		{"OPENAI_BASE_URL", base + "/v1"},
		{"ANTHROPIC_BASE_URL", base + "/anthropic"},
		{"GOOGLE_GEMINI_BASE_URL", base + "/gemini"},
		{"OLLAMA_HOST", base + "/ollama"},
	}
	if placeholders {
		for _, key := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"} {
			if envValue(environ, key) == "" {
				set = append(set, [2]string{key, placeholderKey})
			}
		}
	}
	out := make([]string, 0, len(environ)+len(set))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(set, func(s [2]string) bool { return s[0] == name }) {
			out = append(out, kv)
		}
	}
	for _, s := range set {
		out = append(out, s[0]+"="+s[1])
	}
	return out
}

// envValue is the value of name in environ; the last one wins, as in exec.
func envValue(environ []string, name string) string {
	v := ""
	for _, kv := range environ {
		if n, val, ok := strings.Cut(kv, "="); ok && n == name {
			v = val
		}
	}
	return v
}

// serveWhile runs CMD against the proxy at base, then stops the proxy with
// shutdown and judges the run (see verdict). Every signal from sig while CMD
// runs is passed on to CMD, and the proxy keeps serving until CMD exits; a
// signal during shutdown cuts the drain short. unused, when not nil, lists
// what CMD never used (--fail-on-unused), or "" when it used everything.
//
// Every serving command calls it for its `-- CMD` form.
func (cr *commandRun) serveWhile(ctx context.Context, base string, sig <-chan os.Signal, stdout, stderr io.Writer,
	shutdown func(), unused func() (string, error), report reportFunc) error {
	status, err := cr.run(ctx, base, sig, stdout, stderr)
	shutdown()
	if err != nil {
		return err
	}
	never := ""
	if unused != nil && status == 0 {
		if never, err = unused(); err != nil {
			return err
		}
	}
	closing, err := report(&status)
	if err != nil {
		return err
	}
	if err := cr.verdict(status, never); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			ee.msg += "\n" + strings.Join(closing, "\n")
		}
		return err
	}
	fmt.Fprintf(stderr, "llmproxy: %s\n", strings.Join(closing, "\nllmproxy: "))
	return nil
}

// run starts CMD with the environment of sdkEnv and waits for it, passing
// each signal from sig on to it, and SIGTERM when ctx ends. CMD runs in a
// process group of its own (unless stdin is a terminal, see ownGroup): a
// signal goes to the whole group, and a group still running cr.grace after
// the first is killed, as is what is left of it once CMD has exited after
// a signal. It returns CMD's exit status (128+N when signal N ended it), or
// an error naming CMD when it cannot start.
func (cr *commandRun) run(ctx context.Context, base string, sig <-chan os.Signal, stdout, stderr io.Writer) (int, error) {
	cmd := exec.Command(cr.argv[0], cr.argv[1:]...)
	cmd.Env = sdkEnv(os.Environ(), base, cr.placeholders)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.WaitDelay = cmdWaitDelay
	group := ownGroup(cmd, os.Stdin)
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("cannot start %s: %w", cr.argv[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	done := ctx.Done()
	var kill <-chan time.Time
	signalled := ""
	pass := func(s os.Signal) {
		signalGroup(cmd.Process, group, s)
		if signalled == "" {
			signalled = s.String()
			kill = time.After(cr.grace)
		}
	}
	for {
		select {
		case err := <-exited:
			if signalled != "" && group {
				killGroup(cmd.Process, group) // what CMD left running
			}
			return exitStatus(cr.argv[0], cmd.ProcessState, err)
		case s := <-sig:
			pass(s)
		case <-done:
			done = nil
			pass(syscall.SIGTERM)
		case <-kill:
			kill = nil
			fmt.Fprintf(stderr, "llmproxy: %s did not exit within %s (--kill-grace) of %s; killing its process group\n", cr.argv[0], cr.grace, signalled)
			killGroup(cmd.Process, group)
		}
	}
}

// forward sends s to p, or kills p where s cannot be sent (Windows).
func forward(p *os.Process, s os.Signal) {
	if err := p.Signal(s); err != nil && !errors.Is(err, os.ErrProcessDone) {
		_ = p.Kill()
	}
}

// exitStatus is the status of an exited CMD: its exit code, or 128+N when
// signal N ended it, as a shell reports it.
func exitStatus(name string, ps *os.ProcessState, waitErr error) (int, error) {
	if ps == nil {
		return 0, fmt.Errorf("waiting for %s: %w", name, waitErr)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ps.ExitCode(), nil
}

// verdict is llmproxy's exit once CMD exited with status. It is CMD's
// status; or 3 when that is 0 but a request missed, a request failed
// upstream, or unused lists what was never used. The misses and failures
// are listed whatever the status, each miss with the closest recording the
// proxy found for it.
func (cr *commandRun) verdict(status int, unused string) error {
	misses, n := cr.log.misses.list()
	failures, nf := cr.log.failures.list()
	if status == 0 && n == 0 && nf == 0 && unused == "" {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s exited with status %d", cr.argv[0], status)
	sep := "; "
	if status == 0 {
		sep, status = ", but ", 3
	}
	for _, l := range []struct {
		what  string
		first []string
		n     int
	}{{"missed", misses, n}, {"failed upstream", failures, nf}} {
		if l.n == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s%d request(s) %s:", sep, l.n, l.what)
		for _, m := range l.first {
			fmt.Fprintf(&b, "\n  %s", strings.TrimPrefix(m, "llmproxy: "))
		}
		if l.n > len(l.first) {
			fmt.Fprintf(&b, "\n  and %d more", l.n-len(l.first))
		}
		sep = "\nand "
	}
	if unused != "" {
		b.WriteString(sep + unused)
	}
	return &exitError{code: status, msg: b.String()}
}

// syncWriter makes w safe for the proxy's log and CMD's output to share:
// a file as it is (each write is one system call), anything else behind a
// lock.
func syncWriter(w io.Writer) io.Writer {
	if _, ok := w.(*os.File); ok {
		return w
	}
	return &lockedWriter{w: w}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// missList keeps the misses of a run: the first maxListedMisses messages
// and the count of all. It is safe for concurrent use.
type missList struct {
	mu    sync.Mutex
	first []string
	n     int
}

// add records the miss whose message is msg.
func (m *missList) add(msg string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	if len(m.first) < maxListedMisses {
		m.first = append(m.first, msg)
	}
}

// list returns the kept messages and the number of misses.
func (m *missList) list() ([]string, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.first), m.n
}
