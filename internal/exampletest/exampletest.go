// Package exampletest gives the tests that drive tools outside Go (node,
// npm, Debian's Python, git) one way to need them: a missing tool skips the
// test, or fails it when REQUIRE_EXAMPLE_TESTS is set, as CI sets it; and
// one way to build the llmproxy binary those tests run.
package exampletest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
)

// Require names the environment variable that turns the skips of the
// example tests into failures: CI sets it, so that it never skips them.
const Require = "REQUIRE_EXAMPLE_TESTS"

// Skip skips the test with reason, or fails it when Require is set.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv(Require) != "" {
		t.Fatalf("%s (and %s is set)", reason, Require)
	}
	t.Skip(reason)
}

// BuildLLMProxy builds the llmproxy command into the test's temporary
// directory and returns the binary's path. Without a go tool the test is
// skipped (go test itself needs one, so this is only for the odd runner).
func BuildLLMProxy(t testing.TB) string {
	t.Helper()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		if goTool, err = exec.LookPath("go"); err != nil {
			t.Skip("no go tool to build the binary with")
		}
	}
	bin := filepath.Join(t.TempDir(), "llmproxy")
	out, err := exec.Command(goTool, "build", "-o", bin, "github.com/llmproxy/llmproxy/cmd/llmproxy").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// NodeProject returns the absolute path of dir, a node project whose
// packages npm ci installed, once node and npm are on PATH and its
// node_modules is there (else Skip). It also quiets npm's update notice and
// colours for the test's children.
func NodeProject(t *testing.T, dir string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			Skip(t, tool+" is not installed")
		}
	}
	if _, err := os.Stat(filepath.Join(abs, "node_modules")); err != nil {
		Skip(t, dir+"/node_modules is missing: run npm ci in "+dir)
	}
	t.Setenv("npm_config_update_notifier", "false")
	t.Setenv("NO_COLOR", "1")
	return abs
}

// Unsetenv removes k from the environment for the rest of the test (and
// puts it back after).
func Unsetenv(t *testing.T, k string) {
	t.Setenv(k, "")
	os.Unsetenv(k)
}

// Interactions counts the interactions of the cassette at path.
func Interactions(t testing.TB, path string) int {
	t.Helper()
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := 0
	if err := c.ForEach(func(*cassette.Interaction) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}
