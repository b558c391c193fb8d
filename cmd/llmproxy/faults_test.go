package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/internal/exampletest"
)

// TestFaultFlagsBadInput: a bad --fault is a usage error (exit 2) naming
// the flag and the part at fault; record takes no --fault.
func TestFaultFlagsBadInput(t *testing.T) {
	exampletest.Unsetenv(t, "LLMPROXY_LISTEN")
	cas := filepath.Join(t.TempDir(), "c.cassette")
	sampleCassette(t, cas, 1)
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"replay", "--cassette", cas, "--fault", "boom"}, 2, `--fault: fault "boom": unknown kind "boom"`},
		{[]string{"auto", "--cassette", cas, "--fault", "429@rate=1.5"}, 2, `--fault: fault "429@rate=1.5": rate 1.5 is not a number in [0,1]`},
		{[]string{"mock", "--fault", "stall@for=soon"}, 2, "for soon is not a duration"},
		{[]string{"replay", "--cassette", cas, "--fault", "cut@event=0"}, 2, "event 0 is not a whole number from 1"},
		{[]string{"replay", "--cassette", cas, "--fault-seed", "-1"}, 2, "fault-seed"},
		{[]string{"record", "--cassette", cas, "--fault", "429"}, 2, "--fault"},
	} {
		code, _, stderr := cli(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.says) {
			t.Errorf("llmproxy %s: exit %d, %q; want %d saying %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.says)
		}
	}
}

// TestFaultReport: the run report names each injected fault: which
// request, which fault.
func TestFaultReport(t *testing.T) {
	exampletest.Unsetenv(t, "LLMPROXY_LISTEN")
	cas := filepath.Join(t.TempDir(), "c.cassette")
	sampleCassette(t, cas, 1)
	report := filepath.Join(t.TempDir(), "run.html")
	t.Setenv(childRole, "postpath=/v1/chat/completions|"+hitBody)
	code, stdout, stderr := cli(t, "replay", "--cassette", cas, "--fault", "503@request=1,retry-after=1s", "--report", report, "--", self(t))
	if code != 0 || !strings.Contains(stdout, "status 503") {
		t.Fatalf("exit %d, stdout %q, stderr %s; want the child to get the 503", code, stdout, stderr)
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(report), "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r runReport
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.FaultCount != 1 || len(r.Faults) != 1 || r.Faults[0].Fault != "503@request=1,retry-after=1s" || r.Faults[0].Request != 1 ||
		r.Faults[0].Status != 503 || r.Faults[0].Path != "/v1/chat/completions" {
		t.Errorf("report faults %+v (count %d), want the 503 of request 1", r.Faults, r.FaultCount)
	}
	page, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "<code>503@request=1,retry-after=1s</code>") {
		t.Errorf("the HTML report does not name the fault")
	}
}

// TestFaultFromEnvironment: --fault, --fault-seed and --allow-header-faults
// are read from LLMPROXY_FAULT, LLMPROXY_FAULT_SEED and
// LLMPROXY_ALLOW_HEADER_FAULTS like every serving flag; LLMPROXY_FAULT holds
// one fault, its commas being the fault's options, and a bad one is a
// usage error naming the variable.
func TestFaultFromEnvironment(t *testing.T) {
	exampletest.Unsetenv(t, "LLMPROXY_LISTEN")
	cas := filepath.Join(t.TempDir(), "c.cassette")
	sampleCassette(t, cas, 1)
	t.Setenv("LLMPROXY_FAULT", "429@rate=1.5")
	if code, _, stderr := cli(t, "replay", "--cassette", cas); code != 2 || !strings.Contains(stderr, `LLMPROXY_FAULT: fault "429@rate=1.5": rate 1.5 is not a number in [0,1]`) {
		t.Errorf("bad LLMPROXY_FAULT: exit %d, %q; want 2 naming the variable", code, stderr)
	}
	t.Setenv("LLMPROXY_FAULT", "503@request=1,retry-after=1s")
	t.Setenv("LLMPROXY_FAULT_SEED", "9")
	t.Setenv(childRole, "postpath=/v1/chat/completions|"+hitBody)
	code, stdout, stderr := cli(t, "replay", "--cassette", cas, "--", self(t))
	if code != 0 || !strings.Contains(stdout, "status 503") {
		t.Errorf("LLMPROXY_FAULT=503@request=1,retry-after=1s: exit %d, stdout %q, stderr %s; want the child to get the 503", code, stdout, stderr)
	}
	t.Setenv("LLMPROXY_FAULT", "")
	t.Setenv("LLMPROXY_FAULT_SEED", "many")
	if code, _, stderr := cli(t, "replay", "--cassette", cas); code != 2 || !strings.Contains(stderr, "LLMPROXY_FAULT_SEED") {
		t.Errorf("bad LLMPROXY_FAULT_SEED: exit %d, %q; want 2 naming the variable", code, stderr)
	}
}

// faultStatuses runs a replay process with flags and returns the statuses
// of 8 conversations (8 questions) of 6 requests each, asked one
// conversation after another or all 8 at once, listed by conversation.
func faultStatuses(t *testing.T, bin, cas string, parallel bool, flags ...string) string {
	t.Helper()
	p := startProc(t, bin, true, append([]string{"replay", "--cassette", cas, "--listen", "127.0.0.1:0", "--on-exhausted", "repeat-last"}, flags...)...)
	defer p.kill(t)
	const conversations, rounds = 8, 6
	got := make([]string, conversations)
	ask := func(q int) {
		var b strings.Builder
		fmt.Fprintf(&b, "question %d:", q)
		for round := range rounds {
			body := fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"question %d MARKER"}]}`, q)
			resp, err := http.Post(p.base+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Errorf("question %d, round %d: %v", q, round, err)
				return
			}
			resp.Body.Close()
			fmt.Fprintf(&b, " %d", resp.StatusCode)
		}
		got[q] = b.String()
	}
	var wg sync.WaitGroup
	for q := range conversations {
		if parallel {
			wg.Add(1)
			go func() { defer wg.Done(); ask(q) }()
		} else {
			ask(q)
		}
	}
	wg.Wait()
	return strings.Join(got, "\n")
}

// TestFaultSeedAcrossProcesses: two processes given the same seed fault
// the same requests, the second asked by 8 conversations at once; another
// seed faults others.
func TestFaultSeedAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := exampletest.BuildLLMProxy(t)
	cas := filepath.Join(t.TempDir(), "c.cassette")
	sampleCassette(t, cas, 8)
	first := faultStatuses(t, bin, cas, false, "--fault", "500@rate=0.3", "--fault-seed", "42")
	if !strings.Contains(first, "500") || !strings.Contains(first, "200") {
		t.Fatalf("statuses %s: want some 500s among the 200s", first)
	}
	if second := faultStatuses(t, bin, cas, true, "--fault", "500@rate=0.3", "--fault-seed", "42"); second != first {
		t.Errorf("same seed, another process, 8 conversations at once:\n%s\nwant\n%s", second, first)
	}
	if other := faultStatuses(t, bin, cas, false, "--fault", "500@rate=0.3", "--fault-seed", "43"); other == first {
		t.Errorf("seeds 42 and 43 fault the same requests: %s", other)
	}
}

// TestNodeFaults runs examples/node-faults: the npm openai client meeting
// each fault mock injects by header (a 429 its default retry gets past, a
// 503, a stream cut after its third event, a stall past its timeout, a
// malformed event) under `llmproxy mock --allow-header-faults -- npm test`.
func TestNodeFaults(t *testing.T) {
	dir := nodeExample(t, "node-faults")
	exampletest.Unsetenv(t, "OPENAI_API_KEY")
	args := []string{"mock", "--scenario", filepath.Join(dir, "scenario.yaml"), "--pace", "instant", "--allow-header-faults", "--",
		"npm", "--prefix", dir, "test"}
	if code, stdout, stderr := cliWait(t, 2*time.Minute, args...); code != 0 {
		t.Errorf("npm test: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
