package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/internal/exampletest"
	"github.com/llmproxy/llmproxy/match"
)

// hostile is recorded content that would run, were it markup.
const hostile = `<script>alert(1)</script><img src=x onerror=alert(2)>`

// checkReportHTML fails unless page is the report's HTML with every value
// as text: no script element and no handler attribute from content, the
// hostile value escaped, and a Content-Security-Policy that allows no
// script and only the page's own style.
func checkReportHTML(t *testing.T, page string) {
	t.Helper()
	if strings.Contains(page, "<script") || strings.Contains(page, "<img") {
		t.Errorf("the report holds markup from recorded content:\n%s", page)
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the report does not show the hostile content as text:\n%s", page)
	}
	m := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the report has no Content-Security-Policy:\n%s", page)
	}
	sum := sha256.Sum256([]byte(reportStyle))
	csp := html.UnescapeString(m[1]) // as the browser reads the attribute
	for _, want := range []string{"default-src 'none'", "script-src 'none'", "style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("Content-Security-Policy %q allows unsafe script or style", csp)
	}
	if !strings.Contains(page, "<style>"+reportStyle+"</style>") {
		t.Errorf("the report's style is not the one its policy hashes")
	}
}

// TestReportFiles: a report is written as HTML and as JSON beside it; the
// JSON has the shape of testdata/report.golden.json; recorded content in
// the HTML is text.
func TestReportFiles(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	status := 0
	r := &runReport{Command: "replay", CMD: []string{"pytest", "-x"}, CMDStatus: &status,
		Misses: []problem{{Message: "cassette c.cassette has no recording of this request (POST /v1/chat/completions); closest is interaction 3 " + hostile,
			Time: &at, Cassette: "c.cassette", Method: "POST", Path: "/v1/chat/completions", Status: 400, Closest: 3,
			Differences: []match.Difference{{Path: "messages.0.content", Where: "messages[0] (user)", Got: "question", Want: hostile}},
			View:        "llmproxy view --cassette c.cassette, then open http://127.0.0.1:7878/_llmproxy/ui/interactions/3"}},
		MissCount: 25,
		Failures: []problem{{Message: "cassette c.cassette: POST /v1/chat/completions to upstream openai (http://127.0.0.1:1): upstream failed: connection refused",
			Time: &at, Cassette: "c.cassette", Method: "POST", Path: "/v1/chat/completions", Status: 502}},
		FailureCount: 1,
		Unused:       []unusedGroup{{Cassette: "c.cassette", Count: 1, Items: []string{"interaction 2 POST /v1/chat/completions"}}},
	}
	file := filepath.Join(t.TempDir(), "run.html")
	if err := r.write(file); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(filepath.Dir(file), "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report.golden.json", js)
	page, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	checkReportHTML(t, string(page))
	if !strings.Contains(string(page), "And 25 in all") {
		t.Errorf("the report does not say how many misses there were in all")
	}
}

// TestWrapperReport: a -- CMD run writes its report, by default in a new
// directory under the temporary directory, and the stderr listing names
// it; the report gives each miss's closest recording, its differences and
// how to open it once the proxy is gone. With --report it goes where named.
func TestWrapperReport(t *testing.T) {
	exampletest.Unsetenv(t, "LLMPROXY_LISTEN")
	cas := filepath.Join(t.TempDir(), "three.cassette")
	sampleCassette(t, cas, 3)
	asked := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"question 0 ` + strings.ReplaceAll(hostile, `"`, `\"`) + `"}]}`
	named := filepath.Join(t.TempDir(), "ci", "llm-report.html")
	os.MkdirAll(filepath.Dir(named), 0o755)
	for _, tc := range []struct {
		name  string
		flags []string
	}{{"default", nil}, {"--report", []string{"--report", named}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(childRole, "post="+asked)
			args := append([]string{"replay", "--cassette", cas}, tc.flags...)
			code, _, stderr := cli(t, append(append(args, "--"), self(t))...)
			if code != 3 {
				t.Fatalf("exit %d, want 3\n%s", code, stderr)
			}
			m := regexp.MustCompile(`report of the run: (\S+\.html) \(and (\S+\.json)\)`).FindStringSubmatch(stderr)
			if m == nil {
				t.Fatalf("stderr does not name the report:\n%s", stderr)
			}
			if tc.name == "default" && !strings.HasPrefix(m[1], os.TempDir()) {
				t.Errorf("default report %s is not under the temporary directory %s", m[1], os.TempDir())
			}
			if tc.name == "--report" && (m[1] != named || m[2] != strings.TrimSuffix(named, ".html")+".json") {
				t.Errorf("report %s and %s, want %s and its .json", m[1], m[2], named)
			}
			var r runReport
			data, err := os.ReadFile(m[2])
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &r); err != nil {
				t.Fatal(err)
			}
			if r.MissCount != 1 || len(r.Misses) != 1 || r.Misses[0].Closest != 1 || len(r.Misses[0].Differences) == 0 ||
				r.Misses[0].Differences[0].Path != "messages.0.content" || !strings.Contains(r.Misses[0].View, "llmproxy view --cassette "+cas) ||
				r.CMDStatus == nil || *r.CMDStatus != 0 || len(r.Unused) != 1 || r.Unused[0].Count != 3 {
				t.Errorf("report JSON:\n%s", data)
			}
			page, err := os.ReadFile(m[1])
			if err != nil {
				t.Fatal(err)
			}
			checkReportHTML(t, string(page))
		})
	}
}

// TestServingReport: a serving command given --report without -- CMD
// writes the report of its run when it stops (SIGTERM): the miss with its
// closest recording and the interactions never used.
func TestServingReport(t *testing.T) {
	bin := exampletest.BuildLLMProxy(t)
	cas := filepath.Join(t.TempDir(), "three.cassette")
	sampleCassette(t, cas, 3)
	page := filepath.Join(t.TempDir(), "run.html")
	p := startProc(t, bin, true, "replay", "--cassette", cas, "--listen", "127.0.0.1:0", "--report", page)
	asked := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"question 0 ` + strings.ReplaceAll(hostile, `"`, `\"`) + `"}]}`
	resp, err := http.Post(p.base+"/v1/chat/completions", "application/json", strings.NewReader(asked))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("the changed request: %d, want a miss", resp.StatusCode)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d after SIGTERM: %s", code, p.stderr)
	}
	data, err := os.ReadFile(strings.TrimSuffix(page, ".html") + ".json")
	if err != nil {
		t.Fatalf("no JSON report after the run: %v\n%s", err, p.stderr)
	}
	var r runReport
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Command != "replay" || r.CMD != nil || r.MissCount != 1 || len(r.Misses) != 1 || r.Misses[0].Closest != 1 ||
		len(r.Unused) != 1 || r.Unused[0].Count != 3 {
		t.Errorf("report JSON:\n%s", data)
	}
	text, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	checkReportHTML(t, string(text))
}
