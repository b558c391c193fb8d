package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/llmproxy/llmproxy/internal/exampletest"
	"github.com/llmproxy/llmproxy/internal/uitest"
)

func TestViewUsage(t *testing.T) {
	demo := demoCopy(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nsteps: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"view"}, 2, "give one of --cassette and --scenario"},
		{[]string{"view", "--cassette", demo, "--scenario", "s.yaml"}, 2, "give one of"},
		{[]string{"view", "--cassette", demo, "--pace", "recorded"}, 2, "--pace is not a flag of view"},
		{[]string{"view", "--cassette", demo, "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"view", "--cassette", demo, "--listen", "0.0.0.0:0"}, 2, "set --admin-token"},
		{[]string{"view", "--scenario", filepath.Join(t.TempDir(), "none.yaml"), "--listen", "127.0.0.1:0"}, 1, "none.yaml"},
		{[]string{"view", "--scenario", bad, "--listen", "127.0.0.1:0"}, 1, "bad.yaml:2: "},
		{[]string{"view", "--cassette", filepath.Join(t.TempDir(), "none.cassette"), "--listen", "127.0.0.1:0"}, 1, "none.cassette"},
		{[]string{"view", "-h"}, 0, "llmproxy view serves the web view of a cassette or a scenario alone"},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if tc.code == 0 {
			stderr = stdout // help asked for is output
		}
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.want)
		}
	}
}

// TestViewProcess runs `llmproxy view` of a cassette and of a scenario,
// a mock and a replay, each with a live log page open, and stops each with
// SIGTERM: an open page must not hold up the shutdown.
func TestViewProcess(t *testing.T) {
	bin := exampletest.BuildLLMProxy(t)
	path := filepath.Join(t.TempDir(), "sample.cassette")
	uitest.Cassette(t, path)
	for _, tc := range []struct {
		name, page, want, home string
		args                   []string
	}{
		{"view", "/_llmproxy/ui/interactions/3", "Can the country of Crumpet have dragons?", "/_llmproxy/ui/",
			[]string{"view", "--cassette", path, "--listen", "127.0.0.1:0", "--shutdown-timeout", "60s"}},
		{"view-scenario", "/_llmproxy/ui/scenario", `<code>ask</code>`, "/_llmproxy/ui/scenario",
			[]string{"view", "--scenario", "../../scenario/testdata/valid/weather.yaml", "--listen", "127.0.0.1:0", "--shutdown-timeout", "60s"}},
		// mock's scenario page names the file each scenario came from.
		{"mock", "/_llmproxy/ui/scenario", `weather <small>../../scenario/testdata/valid/weather.yaml</small>`, "",
			[]string{"mock", "--scenario", "../../scenario/testdata/valid/weather.yaml", "--listen", "127.0.0.1:0", "--shutdown-timeout", "60s"}},
		{"replay", "/_llmproxy/ui/interactions/3", "Can the country of Crumpet have dragons?", "",
			[]string{"replay", "--cassette", path, "--listen", "127.0.0.1:0", "--shutdown-timeout", "60s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startProc(t, bin, true, tc.args...)
			resp, err := http.Get(p.base + tc.page)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(body), tc.want) {
				t.Fatalf("%s: status %d\n%.2000s", tc.page, resp.StatusCode, body)
			}
			if tc.home != "" {
				noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
				resp, err := noRedirect.Get(p.base + "/")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != tc.home {
					t.Errorf("/: %d to %q, want 303 to %s", resp.StatusCode, resp.Header.Get("Location"), tc.home)
				}
			}
			live, err := http.Get(p.base + "/_llmproxy/ui/log/events")
			if err != nil {
				t.Fatal(err)
			}
			defer live.Body.Close()
			if line, err := bufio.NewReader(live.Body).ReadString('\n'); err != nil || line != "retry: 2000\n" {
				t.Fatalf("the live log stream began %q, %v", line, err)
			}
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(t); code != 0 {
				t.Errorf("exit %d after SIGTERM; stderr:\n%s", code, p.stderr)
			}
			if strings.Contains(p.stderr.String(), "did not drain") {
				t.Errorf("the live log held up the shutdown:\n%s", p.stderr)
			}
		})
	}
}

// TestViewPagesUnderEveryCommand opens every page of the web view under
// every serving command: each answers with its content, never a 500, and
// a page that has nothing to show says why.
func TestViewPagesUnderEveryCommand(t *testing.T) {
	dir := t.TempDir()
	sample := filepath.Join(dir, "sample.cassette")
	uitest.Cassette(t, sample)
	fresh := filepath.Join(t.TempDir(), "fresh.cassette")
	scenarioFile := "../../docs/scenarios/weather.yaml"
	// with is what a page shows under a command that serves a cassette;
	// without what it shows under one that serves only a scenario.
	type page struct{ path, with, without string }
	pages := []page{
		{"/_llmproxy/ui/", "lookup_population", "serves scenarios, no cassette"},
		{"/_llmproxy/ui/log", "Nothing served yet", "Nothing served yet"},
		{"/_llmproxy/ui/presets", "Arguments schema", "Arguments schema"},
		{"/_llmproxy/ui/scenario", "This process serves no scenario", "<code>ask</code>"},
	}
	for _, tc := range []struct {
		name     string
		args     []string
		scenario bool   // serves a scenario, no cassette
		query    string // the ?cassette= of a --cassette-dir server
		empty    bool   // the cassette holds nothing yet
	}{
		{name: "record", args: []string{"record", "--cassette", fresh}, empty: true},
		{name: "replay", args: []string{"replay", "--cassette", sample}},
		{name: "auto", args: []string{"auto", "--cassette", sample}},
		{name: "mock", args: []string{"mock", "--scenario", scenarioFile}, scenario: true},
		{name: "view --cassette", args: []string{"view", "--cassette", sample}},
		{name: "view --scenario", args: []string{"view", "--scenario", scenarioFile}, scenario: true},
		{name: "replay --cassette-dir", args: []string{"replay", "--cassette-dir", dir}, query: "?cassette=sample"},
		{name: "record --cassette-dir", args: []string{"record", "--cassette-dir", dir}, query: "?cassette=sample"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serve(t, tc.args...)
			if s.base == "" {
				t.Fatalf("did not start: exit %d: %s", <-s.done, s.stderr)
			}
			check := func(path string, status int, want string) {
				t.Helper()
				resp, err := http.Get(s.base + path)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != status || !strings.Contains(string(body), want) {
					t.Errorf("%s: status %d, want %d with %q:\n%.1500s", path, resp.StatusCode, status, want, body)
				}
			}
			for _, p := range pages {
				want := p.with
				switch {
				case tc.scenario:
					want = p.without
				case tc.empty && p.path == "/_llmproxy/ui/":
					want = "holds no interactions yet"
				case tc.query != "" && p.path == "/_llmproxy/ui/":
					want = `href="/_llmproxy/ui/?cassette=sample"`
				}
				check(p.path, http.StatusOK, want)
			}
			switch {
			case tc.scenario:
				check("/_llmproxy/ui/interactions/1", http.StatusNotFound, "serves scenarios, no cassette")
			case tc.empty:
				check("/_llmproxy/ui/interactions/1", http.StatusNotFound, "interaction 1")
			default:
				check("/_llmproxy/ui/"+tc.query, http.StatusOK, "lookup_population")
				check("/_llmproxy/ui/interactions/3"+tc.query, http.StatusOK, "Can the country of Crumpet have dragons?")
			}
		})
	}
}
