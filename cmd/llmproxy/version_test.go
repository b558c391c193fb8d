package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildVersion(t *testing.T) {
	for _, tc := range []struct {
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{nil, false, fallbackVersion},
		{&debug.BuildInfo{Main: debug.Module{Version: ""}}, true, fallbackVersion},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, fallbackVersion},
		{&debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, true, "v1.2.3"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261203131500-a656563f0e2b+dirty"}}, true, "v0.0.0-20261203131500-a656563f0e2b+dirty"},
	} {
		if got := buildVersion(tc.info, tc.ok); got != tc.want {
			t.Errorf("buildVersion(%+v, %v) = %q, want %q", tc.info, tc.ok, got, tc.want)
		}
	}
}

// TestStampedOr: a version stamped with -ldflags -X wins over the build
// information's, which is read only when none is stamped.
func TestStampedOr(t *testing.T) {
	tagged := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, true
	}
	if got := stampedOr("v9.8.7", tagged); got != "v9.8.7" {
		t.Errorf("stampedOr(v9.8.7) = %q, want the stamped v9.8.7", got)
	}
	if got := stampedOr("", tagged); got != "v1.2.3" {
		t.Errorf("stampedOr(\"\") = %q, want the build information's v1.2.3", got)
	}
}

// TestVersion: `llmproxy version`, --version and -version print the version.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version", "-version"} {
		code, stdout, stderr := runCLI(t, arg)
		if code != 0 || stdout != "llmproxy "+version+"\n" || stderr != "" {
			t.Errorf("llmproxy %s: exit %d, stdout %q, stderr %q; want 0 and %q", arg, code, stdout, stderr, "llmproxy "+version+"\n")
		}
	}
	if code, _, stderr := runCLI(t, "version", "extra"); code != 2 || !strings.Contains(stderr, `"extra"`) {
		t.Errorf("llmproxy version extra: exit %d, stderr %q; want 2 naming the argument", code, stderr)
	}
}

// TestUsage: the usage (testdata/usage.golden) shows the version and lists
// every command with its one-sentence job; `llmproxy help` prints it on
// stdout, and with no command at all it goes to stderr with exit 2.
func TestUsage(t *testing.T) {
	code, stdout, stderr := runCLI(t, "help")
	if code != 0 || stderr != "" {
		t.Fatalf("llmproxy help: exit %d, stderr %q", code, stderr)
	}
	if !strings.HasPrefix(stdout, "llmproxy "+version+" ") {
		t.Errorf("usage starts %q; want the version first", strings.SplitN(stdout, "\n", 2)[0])
	}
	for _, c := range commands() {
		if !strings.Contains(stdout, "\n  "+c.name+" ") || !strings.Contains(stdout, " "+c.summary+"\n") {
			t.Errorf("usage lacks %s and its job %q", c.name, c.summary)
		}
	}
	golden(t, "usage.golden", []byte(strings.Replace(stdout, version, "VERSION", 1)))
	for _, args := range [][]string{{"--help"}, {"-h"}} {
		if _, again, _ := runCLI(t, args...); again != stdout {
			t.Errorf("llmproxy %s differs from llmproxy help", args[0])
		}
	}
	if code, _, bare := runCLI(t); code != 2 || bare != stdout {
		t.Errorf("llmproxy with no command: exit %d; want 2 and the usage on stderr", code)
	}
}

// TestHelpCommand: `llmproxy help COMMAND` prints that command's help on
// stdout, the same text as `llmproxy COMMAND -h`.
func TestHelpCommand(t *testing.T) {
	for _, c := range commands() {
		code, stdout, _ := runCLI(t, "help", c.name)
		_, want, _ := runCLI(t, c.name, "-h")
		if code != 0 || stdout != want || !strings.HasPrefix(stdout, "llmproxy "+c.name+" ") {
			t.Errorf("llmproxy help %s: exit %d, stdout %q; want 0 and %q", c.name, code, stdout, want)
		}
	}
	if code, _, stderr := runCLI(t, "help", "recrod"); code != 2 || !strings.Contains(stderr, `"recrod"`) {
		t.Errorf("llmproxy help recrod: exit %d, stderr %q; want 2 naming it", code, stderr)
	}
}
