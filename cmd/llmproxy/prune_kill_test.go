package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
)

// testPruneKilled: prune SIGKILLed at points from its start to its end
// leaves, each time, the old cassette byte for byte or the whole pruned
// one, never a part of either.
func testPruneKilled(t *testing.T, bin string) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big.cassette")
	const n = 4000
	ct := &cassette.Contents{}
	for k := range n {
		ct.Interactions = append(ct.Interactions, &cassette.Interaction{
			Upstream: "openai", Provider: "openai", Kind: "openai-chat", RecordedAt: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC),
			Request: cassette.Request{Method: "POST", Path: "/v1/chat/completions",
				Body: cassette.Body(fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"question %d %s"}]}`, k, strings.Repeat("x", 2000)))},
			Response: cassette.Response{Status: 200, Body: cassette.Body(`{"choices":[]}`)},
		})
	}
	x, err := cassette.DefaultIndexer()
	if err != nil {
		t.Fatal(err)
	}
	if err := cassette.WriteFile(path, ct, x.Keys, cassette.Options{Version: version}); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Every odd interaction was unused.
	var unused []map[string]uint64
	for id := uint64(1); id <= n; id += 2 {
		unused = append(unused, map[string]uint64{"id": id})
	}
	used, _ := json.Marshal(map[string]any{"cassette": path, "total": len(unused), "unused": unused})
	usedPath := filepath.Join(dir, "unused.json")
	os.WriteFile(usedPath, used, 0o644)
	outcomes := map[string]int{}
	// The delays grow past the time a prune takes: the last round is not
	// killed at all.
	for round := range 9 {
		cmd := exec.Command(bin, "prune", "--cassette", path, "--used", usedPath)
		cmd.Env = append(os.Environ(), "LLMPROXY_CASSETTE=")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if round < 8 {
			time.Sleep(time.Duration(round) * 60 * time.Millisecond)
			cmd.Process.Kill()
		}
		if err := cmd.Wait(); round == 8 && err != nil {
			t.Fatalf("prune: %v", err)
		}
		all, rewritten, err := oldOrWhole(t, path, old, round)
		if !rewritten {
			outcomes["old"]++
			continue
		}
		outcomes["pruned"]++
		if err != nil || len(all) != n/2 || !strings.Contains(string(all[0].Request.Body), "question 1 ") || !strings.Contains(string(all[len(all)-1].Request.Body), fmt.Sprintf("question %d ", n-1)) {
			t.Fatalf("round %d: the pruned cassette holds %d interactions (%v), want the %d kept", round, len(all), err, n/2)
		}
		os.WriteFile(path, old, 0o644) // the next round prunes the old one again
	}
	if outcomes["pruned"] == 0 {
		t.Errorf("no round left the pruned cassette: %v", outcomes)
	}
	t.Logf("outcomes of the kills: %v", outcomes)
}
