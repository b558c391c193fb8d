package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCommandHelp: each command's -h (asked for) exits 0 and prints, on
// stdout, its help (testdata/help/NAME.golden): one sentence saying what the
// command does, its synopsis, and its own flags only; nothing on stderr, so
// that `llmproxy record -h | grep pace` finds the flag.
func TestCommandHelp(t *testing.T) {
	for _, cmd := range commands() {
		t.Run(cmd.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, cmd.name, "-h")
			if code != 0 || stderr != "" {
				t.Errorf("llmproxy %s -h: exit %d, stderr %q; want 0 and nothing", cmd.name, code, stderr)
			}
			first, _, _ := strings.Cut(stdout, "\n")
			if !strings.HasPrefix(first, "llmproxy "+cmd.name+" ") || !strings.HasSuffix(first, ".") || strings.Count(first, ". ") > 0 {
				t.Errorf("help starts with %q; want one sentence: llmproxy %s does what.", first, cmd.name)
			}
			golden(t, filepath.Join("help", cmd.name+".golden"), []byte(stdout))
		})
	}
}

// TestSubcommandHelpOnStdout: the help of scenario's subcommands, asked for,
// is on stdout with exit 0; printed for a usage mistake it is on stderr with
// exit 2.
func TestSubcommandHelpOnStdout(t *testing.T) {
	for _, args := range [][]string{
		{"scenario", "-h"},
		{"scenario", "check", "-h"},
		{"scenario", "from-cassette", "-h"},
		{"help", "record"},
	} {
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "llmproxy ") {
			t.Errorf("llmproxy %s: exit %d, stdout %q, stderr %q; want exit 0, the help on stdout and nothing on stderr",
				strings.Join(args, " "), code, stdout, stderr)
		}
	}
	for _, args := range [][]string{{}, {"scenario"}, {"scenario", "frobnicate"}} {
		code, stdout, stderr := runCLI(t, args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "Usage") {
			t.Errorf("llmproxy %s: exit %d, stdout %q, stderr %q; want exit 2 and the usage on stderr only",
				strings.Join(args, " "), code, stdout, stderr)
		}
	}
}

// TestServingHelpShowsCommandForm: the help of every serving command shows
// its `-- CMD [ARG]...` form.
func TestServingHelpShowsCommandForm(t *testing.T) {
	for _, name := range []string{"record", "replay", "auto", "mock"} {
		_, stdout, _ := runCLI(t, name, "-h")
		if !strings.Contains(stdout, "[-- CMD [ARG]...]") {
			t.Errorf("llmproxy %s -h does not show the -- CMD form:\n%s", name, stdout)
		}
	}
}

// TestServingCommandsTakeTheirOwnFlags: record forwards and never replays,
// replay replays and never forwards; auto does both.
func TestServingCommandsTakeTheirOwnFlags(t *testing.T) {
	replayFlags := []string{"--pace", "--on-exhausted", "--latency", "--fail-on-unused"}
	forwardFlags := []string{"--upstream-timeout"}
	for _, tc := range []struct {
		cmd            string
		takes, refuses []string
	}{
		{"record", forwardFlags, replayFlags},
		{"replay", replayFlags, forwardFlags},
		{"auto", append(replayFlags, forwardFlags...), nil},
	} {
		_, help, _ := runCLI(t, tc.cmd, "-h")
		for _, f := range tc.takes {
			if !strings.Contains(help, "  "+f+" ") && !strings.Contains(help, "  "+f+"\n") {
				t.Errorf("llmproxy %s -h does not list %s", tc.cmd, f)
			}
		}
		for _, f := range tc.refuses {
			if strings.Contains(help, "  "+f) {
				t.Errorf("llmproxy %s -h lists %s, which it does not take", tc.cmd, f)
			}
		}
	}
}

// TestFlagOfAnotherCommand: a flag that another command takes is a usage
// error, named with the commands that do take it, before anything is
// opened or bound.
func TestFlagOfAnotherCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"record", "--pace", "recorded"}, "--pace is not a flag of record (replay and auto take it)"},
		{[]string{"record", "--on-exhausted", "restart"}, "--on-exhausted is not a flag of record (replay and auto take it)"},
		{[]string{"record", "--latency", "1s"}, "--latency is not a flag of record (replay and auto take it)"},
		{[]string{"record", "--fail-on-unused"}, "--fail-on-unused is not a flag of record (replay and auto take it)"},
		{[]string{"replay", "--upstream-timeout", "1s"}, "--upstream-timeout is not a flag of replay (record and auto take it)"},
	} {
		dir := t.TempDir()
		t.Chdir(dir)
		args := append([]string{tc.args[0], "--cassette", "c.cassette", "--listen", "127.0.0.1:0"}, tc.args[1:]...)
		code, stderr := runBriefly(t, args...)
		want := "llmproxy: " + tc.args[0] + ": " + tc.want + "\nRun 'llmproxy " + tc.args[0] + " --help' for its flags.\n"
		if code != 2 || stderr != want {
			t.Errorf("llmproxy %s: exit %d, stderr\n%s\nwant exit 2, stderr\n%s", strings.Join(args, " "), code, stderr, want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("llmproxy %s created %s", strings.Join(args, " "), entries[0].Name())
		}
	}
}

// TestMistypedFlag: an unknown flag prints the error once and one line
// pointing at the command's help, not the whole help; one "llmproxy:"
// prefix.
func TestMistypedFlag(t *testing.T) {
	for _, args := range [][]string{
		{"record", "--cassete", "x"},
		{"replay", "--bogus", "--cassette", "x"},
		{"auto", "-x"},
		{"export", "--format", "yaml"},
		{"import", "--merge"},
		{"ls", "--long"},
		{"scrub", "--maps", "a=b"},
		{"presets", "--yaml"},
		{"demo", "--fast"},
	} {
		code, _, stderr := runCLI(t, args...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		flag := strings.TrimLeft(args[1], "-")
		if code != 2 || len(lines) != 2 ||
			lines[0] != "llmproxy: "+args[0]+": flag provided but not defined: -"+flag ||
			lines[1] != "Run 'llmproxy "+args[0]+" --help' for its flags." {
			t.Errorf("llmproxy %s: exit %d, stderr\n%s\nwant exit 2, the error naming -%s and a pointer to --help", strings.Join(args, " "), code, stderr, flag)
		}
	}
}

// TestOnePrefix: an error message names llmproxy once, in its "llmproxy: "
// prefix (not "llmproxy: llmproxy export: ...").
func TestOnePrefix(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"export"},
		{"import", "--cassette", "x"},
		{"ls", "--cassette", "x", "extra"},
		{"record", "--cassette", "x", "--cassette-dir", dir},
		{"replay"},
		{"frobnicate"},
	} {
		code, _, stderr := runCLI(t, args...)
		first, _, _ := strings.Cut(stderr, "\n")
		if code != 2 || strings.Count(first, "llmproxy") != 1 || !strings.HasPrefix(first, "llmproxy: ") {
			t.Errorf("llmproxy %s: exit %d, stderr %q; want exit 2 and one message with one llmproxy: prefix", strings.Join(args, " "), code, stderr)
		}
	}
}

// TestBadValueFromEnvironment: a bad value read from an environment variable
// is named by the variable, not by the flag it stands for; a variable of a
// flag the command does not take is ignored.
func TestBadValueFromEnvironment(t *testing.T) {
	path := demoCopy(t)
	for _, tc := range []struct {
		cmd, env, value string
	}{
		{"replay", "LLMPROXY_PACE", "bogus"},
		{"replay", "LLMPROXY_ON_EXHAUSTED", "loop"},
		{"replay", "LLMPROXY_LATENCY", "-1s"},
		{"replay", "LLMPROXY_LOG_FORMAT", "xml"},
		{"replay", "LLMPROXY_MAX_BODY", "0"},
		{"replay", "LLMPROXY_LISTEN", "0.0.0.0:0"},
		{"replay", "LLMPROXY_LISTEN", "nonsense"},
		{"replay", "LLMPROXY_RULES", filepath.Join(t.TempDir(), "missing.json")},
		{"record", "LLMPROXY_UPSTREAM", "ftp://example.com"},
		{"auto", "LLMPROXY_UPSTREAM", "_x=http://127.0.0.1:1"},
	} {
		t.Run(tc.env+"="+tc.value, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			args := []string{tc.cmd, "--cassette", path}
			if tc.env != "LLMPROXY_LISTEN" {
				args = append(args, "--listen", "127.0.0.1:0")
			}
			code, stderr := runBriefly(t, args...)
			flag := "--" + strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(tc.env, "LLMPROXY_")), "_", "-")
			if code != 2 || !strings.Contains(stderr, tc.env) || strings.Contains(stderr, flag+" ") {
				t.Errorf("llmproxy %s with %s=%s: exit %d, stderr %q; want exit 2 naming %s, not %s", tc.cmd, tc.env, tc.value, code, stderr, tc.env, flag)
			}
		})
	}
	t.Run("not this command's", func(t *testing.T) {
		t.Setenv("LLMPROXY_PACE", "bogus")
		code, stderr := runBriefly(t, "record", "--cassette", path, "--listen", "nonsense")
		if code != 2 || !strings.Contains(stderr, "--listen") || strings.Contains(stderr, "PACE") {
			t.Errorf("record with LLMPROXY_PACE=bogus: exit %d, stderr %q; want only the --listen error", code, stderr)
		}
	})
}

// runBriefly runs a command line that should fail at once; a server it
// starts instead is stopped after a few seconds, so the test fails rather
// than hangs.
func runBriefly(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, args, &out, &errb)
	return code, errb.String()
}
