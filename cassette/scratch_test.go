package cassette_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
)

// TestScratch: a scratch copy holds the cassette's interactions under
// their ids, answers to the cassette's path, takes writes, and leaves
// neither a file nor a change behind.
func TestScratch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.cassette")
	if err := cassette.WriteFile(path, &cassette.Contents{Interactions: []*cassette.Interaction{sample(1), sample(2)}}, keys, cassette.Options{}); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Scratch(cassette.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Path() != path {
		t.Errorf("Path() = %s, want the cassette's %s", s.Path(), path)
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("with a scratch copy open the directory holds %q, want only a.cassette", got)
	}
	if last, err := s.Last(); err != nil || last != 2 {
		t.Errorf("the copy's last id = %d, %v; want 2", last, err)
	}
	if id, err := appendOne(s, sample(3), "k3", "s"); err != nil || id != 3 {
		t.Errorf("appending to the copy: id %d, %v; want 3", id, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Error("writing the scratch copy changed the cassette's file")
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("after the copy closed the directory holds %q", got)
	}
}
