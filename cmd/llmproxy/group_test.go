//go:build unix

package main

import (
	"errors"
	"github.com/llmproxy/llmproxy/internal/exampletest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWrapperKillsProcessGroup: under -- CMD, a signal goes to CMD's whole
// process group, and a group that ignores it is killed once --kill-grace
// has passed: a child shell that ignores SIGTERM and a grandchild it
// started both end, and llmproxy exits. CMD never sees
// LLMPROXY_ADMIN_TOKEN.
func TestWrapperKillsProcessGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := exampletest.BuildLLMProxy(t)
	dir := t.TempDir()
	cas := filepath.Join(dir, "one.cassette")
	sampleCassette(t, cas, 1)
	pidfile := filepath.Join(dir, "grandchild.pid")
	script := `trap '' TERM; sleep 300 & echo $! > "$0"; echo "token=${LLMPROXY_ADMIN_TOKEN-unset}"; echo ready; wait; wait`
	cmd := exec.Command(bin, "replay", "--cassette", cas, "--kill-grace", "300ms", "--", "sh", "-c", script, pidfile)
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "LLMPROXY_") }),
		"LLMPROXY_ADMIN_TOKEN=secret-admin-token")
	stdout, stderr := &procOutput{}, &procOutput{}
	cmd.Stdout, cmd.Stderr = stdout, stderr // stdin: /dev/null, as in CI
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	grandchild := 0
	t.Cleanup(func() {
		if grandchild > 0 && alive(grandchild) {
			_ = syscall.Kill(grandchild, syscall.SIGKILL)
		}
	})
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	waitFor(t, stdout, "ready\n", done)
	data, err := os.ReadFile(pidfile)
	if grandchild, err = strconv.Atoi(strings.TrimSpace(string(data))); err != nil {
		t.Fatalf("grandchild's pid: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("llmproxy did not exit after SIGTERM to a CMD that ignores it\nstderr: %s", stderr)
	}
	if code := cmd.ProcessState.ExitCode(); code != 128+9 {
		t.Errorf("exit %d, want 137: CMD killed\nstderr: %s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "killing its process group") {
		t.Errorf("stderr does not say CMD's group was killed:\n%s", stderr)
	}
	if !strings.Contains(stdout.String(), "token=unset\n") {
		t.Errorf("CMD saw LLMPROXY_ADMIN_TOKEN: %s", stdout)
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive(grandchild) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(grandchild) {
		t.Errorf("the grandchild %d survived llmproxy", grandchild)
	}
}

// alive reports whether process pid runs (a zombie, dead but not yet
// reaped by whoever adopted it, does not).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) STATE ...: comm may hold spaces, so look after the last ')'.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}
