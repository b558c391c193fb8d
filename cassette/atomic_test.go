package cassette_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
)

// entries lists a directory's names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func interactions(t *testing.T, path string) int {
	t.Helper()
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n, err := c.Len()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDraftCommit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.cassette")
	if err := cassette.WriteFile(path, &cassette.Contents{Interactions: []*cassette.Interaction{sample(1)}}, keys, cassette.Options{}); err != nil {
		t.Fatal(err)
	}
	d, err := cassette.Create(path, cassette.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := appendOne(d.Cassette, sample(2), "k2", "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := appendOne(d.Cassette, sample(3), "k3", "s"); err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(d.Path()) != dir || d.Path() == path {
		t.Errorf("draft file %s, want a new name in %s", d.Path(), dir)
	}
	if n := interactions(t, path); n != 1 {
		t.Errorf("before Commit the path holds %d interactions, want the old file's 1", n)
	}
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := interactions(t, path); n != 2 {
		t.Errorf("after Commit the path holds %d interactions, want the draft's 2", n)
	}
	d.Discard() // after Commit: nothing
	if got := entries(t, dir); len(got) != 1 || got[0] != "a.cassette" {
		t.Errorf("directory holds %q, want only a.cassette", got)
	}
}

func TestDraftDiscardAndFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.cassette")
	d, err := cassette.Create(path, cassette.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d.Discard()
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("after Discard the directory holds %q, want nothing", got)
	}
	boom := errors.New("boom")
	bad := func(*cassette.Interaction) (string, string, error) { return "", "", boom }
	err = cassette.WriteFile(path, &cassette.Contents{Interactions: []*cassette.Interaction{sample(1)}}, bad, cassette.Options{})
	if !errors.Is(err, boom) {
		t.Errorf("WriteFile with failing keys = %v, want boom", err)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("after a failed WriteFile the directory holds %q, want nothing", got)
	}
	if _, err := cassette.Create(filepath.Join(dir, "missing", "a.cassette"), cassette.Options{}); err == nil {
		t.Error("Create in a missing directory succeeded")
	}
}
