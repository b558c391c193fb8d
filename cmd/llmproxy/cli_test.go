package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs the command line in-process and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// demoCopy writes the bundled demo cassette to a temporary file.
func demoCopy(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../cassettes/demo.cassette")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "demo.cassette")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExportImportThroughCLI(t *testing.T) {
	src := demoCopy(t)
	code, first, stderr := runCLI(t, "export", "--cassette", src)
	if code != 0 {
		t.Fatalf("export exited %d: %s", code, stderr)
	}
	if _, again, _ := runCLI(t, "export", src); again != first {
		t.Error("export is not stable (textconv form differs from the --cassette form)")
	}
	dir := t.TempDir()
	exported := filepath.Join(dir, "demo.json")
	if code, _, stderr := runCLI(t, "export", "--cassette", src, "--out", exported); code != 0 {
		t.Fatalf("export --out exited %d: %s", code, stderr)
	}
	dst := filepath.Join(dir, "copy.cassette")
	if code, _, stderr := runCLI(t, "import", "--in", exported, "--cassette", dst); code != 0 {
		t.Fatalf("import exited %d: %s", code, stderr)
	}
	_, second, _ := runCLI(t, "export", "--cassette", dst)
	if second != first {
		t.Errorf("export → import → export differs")
	}
	// The imported cassette replays: its index was rebuilt.
	code, out, _ := runCLI(t, "ls", "--cassette", dst)
	if code != 0 || !strings.Contains(out, "weather(") {
		t.Errorf("ls of the imported cassette (exit %d):\n%s", code, out)
	}
	// A second import onto a full cassette is refused without --force.
	before, _ := os.ReadFile(dst)
	if code, _, stderr := runCLI(t, "import", "--in", exported, "--cassette", dst); code != 1 || !strings.Contains(stderr, "--force") {
		t.Errorf("import onto a full cassette: exit %d, %s", code, stderr)
	}
	after, _ := os.ReadFile(dst)
	if !bytes.Equal(before, after) {
		t.Error("a refused import changed the cassette")
	}
	if code, _, stderr := runCLI(t, "import", "--in", exported, "--cassette", dst, "--force"); code != 0 {
		t.Errorf("import --force exited %d: %s", code, stderr)
	}
}

func TestImportBadExportLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{\n  \"format\": \"llmproxy-cassette\",\n  \"meta\": oops\n}\n"), 0o644)
	dst := filepath.Join(dir, "new.cassette")
	code, _, stderr := runCLI(t, "import", "--in", bad, "--cassette", dst)
	if code != 1 || !strings.Contains(stderr, bad) || !strings.Contains(stderr, "line 3") {
		t.Errorf("import of a bad export: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Errorf("a failed import left %s behind", dst)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "Usage"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"replay"}, "--cassette"},
		{[]string{"replay", "--cassette", "x", "--bogus"}, "bogus"},
		{[]string{"replay", "--cassette", "x", "--pace", "warp"}, "warp"},
		{[]string{"replay", "--cassette", "x", "--on-exhausted", "never"}, "never"},
		{[]string{"record", "--cassette", "x", "--upstream", "ftp://host"}, "ftp://host"},
		{[]string{"record", "--cassette", "x", "--listen", "0.0.0.0:0"}, "--admin-token"},
		{[]string{"export"}, "--cassette"},
		{[]string{"import", "--cassette", "x"}, "--in"},
		{[]string{"ls", "--cassette", "x", "extra"}, "extra"},
	} {
		dir := t.TempDir()
		t.Chdir(dir)
		code, _, stderr := runCLI(t, tc.args...)
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("llmproxy %v: a usage error created %s", tc.args, entries[0].Name())
		}
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("llmproxy %v: exit %d, stderr %q; want exit 2 mentioning %q", tc.args, code, stderr, tc.want)
		}
		if strings.Contains(stderr, "goroutine") {
			t.Errorf("llmproxy %v printed a panic trace", tc.args)
		}
	}
}

func TestFailuresNameTheFile(t *testing.T) {
	dir := t.TempDir()
	notCassette := filepath.Join(dir, "notes.txt")
	os.WriteFile(notCassette, bytes.Repeat([]byte("not bbolt\n"), 1000), 0o644)
	missing := filepath.Join(dir, "missing.cassette")
	for _, args := range [][]string{
		{"ls", "--cassette", notCassette},
		{"export", "--cassette", missing},
		{"replay", "--cassette", missing, "--listen", "127.0.0.1:0"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 1 || !strings.Contains(stderr, args[2]) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("llmproxy %v: exit %d, stderr %q; want exit 1 with one line naming the file", args, code, stderr)
		}
	}
}

func TestFlagsFromEnvironment(t *testing.T) {
	path := demoCopy(t)
	t.Setenv("LLMPROXY_CASSETTE", path)
	code, out, stderr := runCLI(t, "ls")
	if code != 0 || !strings.Contains(out, "openai-chat") {
		t.Errorf("ls with LLMPROXY_CASSETTE: exit %d, %s %s", code, out, stderr)
	}
	t.Setenv("LLMPROXY_PACE", "warp")
	if code, _, stderr := runCLI(t, "replay"); code != 2 || !strings.Contains(stderr, "LLMPROXY_PACE") && !strings.Contains(stderr, "warp") {
		t.Errorf("bad LLMPROXY_PACE: exit %d, %s", code, stderr)
	}
}
