package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/store"
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

// TestMigrateRefusesWhatIsNotACassette: a 0-byte file is an error naming
// the file, and stays 0 bytes; a current-format cassette with a damaged
// record is an error naming the interaction, not "left as it was", and
// stays byte for byte as it was.
func TestMigrateRefusesWhatIsNotACassette(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.cassette")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "migrate", "--cassette", empty)
	if st, err := os.Stat(empty); err != nil || st.Size() != 0 {
		t.Errorf("migrate of a 0-byte file left it %v bytes (%v); want it untouched", st.Size(), err)
	}
	if code != 1 || stdout != "" || !strings.Contains(stderr, empty) || !strings.Contains(stderr, "empty file") {
		t.Errorf("migrate of a 0-byte file: exit %d, stdout %q, stderr %q; want exit 1 naming the file as empty", code, stdout, stderr)
	}

	damaged := filepath.Join(t.TempDir(), "damaged.cassette")
	c, err := cassette.Open(damaged, cassette.Options{})
	if err != nil {
		t.Fatal(err)
	}
	i := &cassette.Interaction{Upstream: "openai", Kind: "openai-chat",
		Request:  cassette.Request{Method: "POST", Path: "/v1/chat/completions", Body: cassette.Body(`{}`)},
		Response: cassette.Response{Status: 200, Body: cassette.Body(`{}`)}}
	if res, err := c.AppendAll([]cassette.Keyed{{Interaction: i, Key: "k1", Shape: "s"}}); err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	c.Close()
	st, err := store.Open(damaged, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A format-2 record whose event table ends past its events.
	bad := []byte{0x02, 0, 0, 0, 1, 16, 'x', 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0}
	_, err = st.AppendAll([]store.Pending{{Key: "k2", Shape: "s", Encode: func(uint64) ([]byte, error) { return bad, nil }}})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(damaged)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI(t, "migrate", "--cassette", damaged)
	if code != 1 || strings.Contains(stdout, "left as it was") || !strings.Contains(stderr, damaged) ||
		!strings.Contains(stderr, "interaction 2") || !strings.Contains(stderr, "damaged interaction record") {
		t.Errorf("migrate of a damaged cassette: exit %d, stdout %q, stderr %q; want exit 1 naming the file and interaction 2 as damaged", code, stdout, stderr)
	}
	if after, err := os.ReadFile(damaged); err != nil || !bytes.Equal(after, before) {
		t.Errorf("migrate of a damaged cassette changed the file (%v)", err)
	}
}
