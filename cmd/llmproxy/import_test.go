package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/store"
)

// TestImportRefusesInformationalStatus: an export whose interaction has a
// 1xx status is refused with one line naming the file, the interaction and
// the status, and no cassette is created.
func TestImportRefusesInformationalStatus(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src.cassette")
	sampleCassette(t, src, 2)
	code, export, stderr := cli(t, "export", "--cassette", src)
	if code != 0 {
		t.Fatalf("export: %d %s", code, stderr)
	}
	i := strings.LastIndex(export, `"status": 200`)
	in := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(in, []byte(export[:i]+`"status": 101`+export[i+len(`"status": 200`):]), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.cassette")
	code, _, stderr = cli(t, "import", "--in", in, "--cassette", out)
	if code != 1 {
		t.Fatalf("import: exit %d, want 1: %s", code, stderr)
	}
	checkOneLine(t, "import", stderr)
	for _, want := range []string{"--in " + in, "interactions[1].response.status", "101 is an informational (1xx) status"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q does not say %q", stderr, want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the cassette was created")
	}
}

// TestImportRedacts: an export edited by hand (or written by an llmproxy
// that knew fewer secrets) is redacted on import like a recording.
func TestImportRedacts(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src.cassette")
	sampleCassette(t, src, 1)
	code, export, stderr := cli(t, "export", "--cassette", src)
	if code != 0 {
		t.Fatalf("export: %d %s", code, stderr)
	}
	const key = "sk-proj-Qz7Canary00Xb4Lm9Qx2Vb7Nc1Rk8Wp3Ys6Jd0Hf5GaTe2"
	edited := strings.Replace(export, "question 0 MARKER", "question 0 MARKER "+key, 1)
	edited = strings.Replace(edited, `"Content-Type": [`, `"Openai-Organization": ["org-Qz7Canary"], "Content-Type": [`, 1)
	if edited == export || !strings.Contains(edited, "org-Qz7Canary") {
		t.Fatal("the export was not edited")
	}
	in := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(in, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.cassette")
	if code, _, stderr := cli(t, "import", "--in", in, "--cassette", out); code != 0 {
		t.Fatalf("import: %d %s", code, stderr)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(bytes.ToLower(raw), []byte("qz7canary")) {
		t.Error("the imported cassette holds the key")
	}
	if !bytes.Contains(raw, []byte("question 0 MARKER REDACTED")) {
		t.Error("the imported cassette lost the request around the key")
	}
}

// TestImportIndexesForServing: an imported cassette is indexed under the
// matching rules that record, replay and auto use with no matching flags,
// so that serving it reads its index as it is; a mismatch made auto (and
// record) rewrite the whole cassette at start, and replay index every
// interaction in memory before listening.
func TestImportIndexesForServing(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src.cassette")
	sampleCassette(t, src, 3)
	in := filepath.Join(t.TempDir(), "in.json")
	if code, _, stderr := cli(t, "export", "--cassette", src, "--out", in); code != 0 {
		t.Fatalf("export: %d %s", code, stderr)
	}
	path := filepath.Join(t.TempDir(), "out.cassette")
	if code, _, stderr := cli(t, "import", "--in", in, "--cassette", path); code != 0 {
		t.Fatalf("import: %d %s", code, stderr)
	}
	imported := metaOf(t, path).IndexRules

	c := serveConfig{mode: proxy.ModeAuto}
	if err := c.flags("auto", io.Discard).Parse([]string{"--cassette", path}); err != nil {
		t.Fatal(err)
	}
	cfg, cleanup, err := c.proxyConfig(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := proxy.New(cfg)
	if err != nil {
		cleanup()
		t.Fatal(err)
	}
	srv.Close()
	cleanup()
	if got := metaOf(t, path).IndexRules; got != imported {
		t.Errorf("auto reindexed the imported cassette: index rules %q, imported with %q", got, imported)
	}
}

// metaOf reads a cassette's metadata.
func metaOf(t *testing.T, path string) store.Meta {
	t.Helper()
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := c.Meta()
	if err != nil {
		t.Fatal(err)
	}
	return m
}
