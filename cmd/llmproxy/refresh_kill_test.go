package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/exampletest"
)

// TestRefreshKilledWhileRewriting: a refresh SIGKILLed at points from the
// end of its run (SIGTERM) to past the end of its final rewrite leaves,
// each time, the old cassette byte for byte or the whole refreshed one,
// never a part of either. 4000 interactions of 2 kB beside the agent's
// make the rewrite last long enough to be hit.
func TestRefreshKilledWhileRewriting(t *testing.T) {
	if testing.Short() {
		t.Skip("records and rewrites a 9 MB cassette nine times")
	}
	bin := exampletest.BuildLLMProxy(t)
	u := refreshUpstream(t)
	path := filepath.Join(t.TempDir(), "big.cassette")
	if code, stderr := serveAgent(t, bin, u.URL(), "Book the cheapest flight.", "auto", "--cassette", path); code != 0 {
		t.Fatalf("auto: exit %d\n%s", code, stderr)
	}
	const filler = 4000
	addFiller(t, path, filler)
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]int{}
	for round := range 9 {
		p := startProc(t, bin, true, "auto", "--refresh", "--cassette", path, "--listen", "127.0.0.1:0", "--upstream", u.URL())
		if _, err := refreshAgent(context.Background(), p.base, "Plan my trip to Lyon.", "Book the fastest flight."); err != nil {
			t.Fatalf("round %d: agent: %v\n%s", round, err, p.stderr)
		}
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if round < 8 {
			time.Sleep(time.Duration(round) * 100 * time.Millisecond)
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
		}
		if code := p.wait(t); round == 8 && code != 0 {
			t.Fatalf("the refresh not killed: exit %d\n%s", code, p.stderr)
		}
		all, rewritten, err := oldOrWhole(t, path, old, round)
		if !rewritten {
			outcomes["old"]++
			continue
		}
		outcomes["refreshed"]++
		if err != nil || len(all) != refreshTurns+filler || !strings.Contains(string(all[1].Request.Body), "fastest") {
			t.Fatalf("round %d: the refreshed cassette holds %d interactions (%v), want %d with turn 2 re-recorded", round, len(all), err, refreshTurns+filler)
		}
		if err := os.WriteFile(path, old, 0o644); err != nil { // the next round refreshes the old one again
			t.Fatal(err)
		}
	}
	if outcomes["refreshed"] == 0 {
		t.Errorf("no round left the refreshed cassette: %v", outcomes)
	}
	t.Logf("outcomes of the kills: %v", outcomes)
}

// oldOrWhole reads the cassette at path after a process rewriting it
// atomically was killed in round: rewritten is false when the file still
// holds old byte for byte; else the file must open as a whole cassette,
// whose interactions it returns.
func oldOrWhole(t *testing.T, path string, old []byte, round int) (all []*cassette.Interaction, rewritten bool, err error) {
	t.Helper()
	now, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(now, old) {
		return nil, false, nil
	}
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("round %d: the cassette is neither the old one nor a whole new one: %v", round, err)
	}
	defer c.Close()
	all, err = c.All()
	return all, true, err
}

// addFiller rewrites the cassette at path with n chat interactions of
// 2 kB each after its own, each a conversation of one turn.
func addFiller(t *testing.T, path string, n int) {
	t.Helper()
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ct, err := c.Load()
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	for k := range n {
		ct.Interactions = append(ct.Interactions, &cassette.Interaction{
			Upstream: "openai", Provider: "openai", Kind: "openai-chat", RecordedAt: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC),
			Request: cassette.Request{Method: "POST", Path: "/v1/chat/completions",
				Body: cassette.Body(fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"filler %d %s"}]}`, k, strings.Repeat("x", 2000)))},
			Response: cassette.Response{Status: 200, Body: cassette.Body(`{"choices":[]}`)},
		})
	}
	x, err := cassette.DefaultIndexer()
	if err != nil {
		t.Fatal(err)
	}
	ct.Meta.IndexRules = x.Fingerprint()
	if err := cassette.WriteFile(path, ct, x.Keys, cassette.Options{Version: version}); err != nil {
		t.Fatal(err)
	}
}
