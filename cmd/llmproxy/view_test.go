package main

import (
	"bufio"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/llmproxy/llmproxy/internal/uitest"
)

func TestViewUsage(t *testing.T) {
	demo := demoCopy(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"view"}, 2, "give exactly one of --cassette and --scenario"},
		{[]string{"view", "--cassette", demo, "--scenario", "s.yaml"}, 2, "give exactly one"},
		{[]string{"view", "--cassette", demo, "--pace", "recorded"}, 2, "--pace is not a flag of view"},
		{[]string{"view", "--cassette", demo, "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"view", "--cassette", demo, "--listen", "0.0.0.0:0"}, 2, "set --admin-token"},
		{[]string{"view", "--scenario", "s.yaml"}, 1, "view --scenario s.yaml: this llmproxy cannot load scenario files yet"},
		{[]string{"view", "--cassette", filepath.Join(t.TempDir(), "none.cassette"), "--listen", "127.0.0.1:0"}, 1, "none.cassette"},
		{[]string{"view", "-h"}, 0, "llmproxy view serves the web view of a cassette alone"},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.want)
		}
	}
}

// TestViewProcess runs `llmproxy view` and a replay with a live log page
// open, and stops each with SIGTERM: an open page must not hold up the
// shutdown.
func TestViewProcess(t *testing.T) {
	bin := buildLLMProxy(t)
	path := filepath.Join(t.TempDir(), "sample.cassette")
	uitest.Cassette(t, path)
	for _, args := range [][]string{
		{"view", "--cassette", path, "--listen", "127.0.0.1:0", "--shutdown-timeout", "60s"},
		{"replay", "--cassette", path, "--listen", "127.0.0.1:0", "--shutdown-timeout", "60s"},
	} {
		t.Run(args[0], func(t *testing.T) {
			p := startProc(t, bin, true, args...)
			resp, err := http.Get(p.base + "/_llmproxy/ui/interactions/3")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(body), "Can the country of Crumpet have dragons?") {
				t.Fatalf("interaction 3: status %d\n%.2000s", resp.StatusCode, body)
			}
			if args[0] == "view" {
				noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
				resp, err := noRedirect.Get(p.base + "/")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/_llmproxy/ui/" {
					t.Errorf("/: %d to %q, want 303 to /_llmproxy/ui/", resp.StatusCode, resp.Header.Get("Location"))
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
