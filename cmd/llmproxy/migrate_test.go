package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// migrate rewrites a format-1 cassette in format 2 and says so; the
// cassette then exports what format 1 exported, and a second migrate
// leaves it as it is.
func TestMigrateCommand(t *testing.T) {
	data, err := os.ReadFile("../../cassette/testdata/v1.cassette")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../cassette/testdata/v1.export.json")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "old.cassette")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "migrate", "--cassette", path)
	if code != 0 || !strings.HasPrefix(stdout, "migrated "+path+" from format version 1 to 2: 6 interactions, 1 fixtures, ") {
		t.Fatalf("migrate: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, got, stderr := runCLI(t, "export", "--cassette", path); code != 0 || got != string(want) {
		t.Errorf("export after migrate: exit %d, stderr %q, and it differs from the format-1 export: %v", code, stderr, got != string(want))
	}
	code, stdout, _ = runCLI(t, "migrate", "--cassette", path)
	if code != 0 || stdout != path+" is already in format version 2 (6 interactions); left as it was\n" {
		t.Errorf("second migrate: exit %d, stdout %q", code, stdout)
	}
	if code, _, stderr := runCLI(t, "migrate", "--cassette", filepath.Join(t.TempDir(), "none.cassette")); code != 1 || !strings.Contains(stderr, "none.cassette") {
		t.Errorf("migrate of a missing file: exit %d, stderr %q; want 1 naming the file", code, stderr)
	}
	if code, _, _ := runCLI(t, "migrate"); code != 2 {
		t.Errorf("migrate without --cassette: exit %d, want 2", code)
	}
}
