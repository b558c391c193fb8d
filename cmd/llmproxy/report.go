package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/tally"
	"github.com/llmproxy/llmproxy/view"
)

// The report of a run (--report FILE, and every -- CMD run): what a CI log's
// miss links pointed at, kept once the proxy is gone. It is written twice,
// as one self-contained HTML page (FILE) and as JSON (FILE with .json for
// its .html, or .json added). Under -- CMD without --report it goes to a
// new directory under the system's temporary directory
// (llmproxy-report-*/report.html), so a run never writes into the
// working tree unasked.

// maxReportUnused bounds the unused interactions or steps a report lists
// per cassette or scenario; the rest are counted.
const maxReportUnused = 100

// runLog collects what a run could not answer: misses and upstream
// failures (see proxy.Config.OnMiss and OnFailure). It is safe for
// concurrent use.
type runLog struct {
	misses, failures missList
}

// runReport is the report of a run, as its JSON says it.
type runReport struct {
	// Command is the serving command: record, replay, auto or mock.
	Command string `json:"command"`
	// CMD and CMDStatus are the wrapped command and its exit status;
	// absent without -- CMD.
	CMD       []string `json:"cmd,omitempty"`
	CMDStatus *int     `json:"cmd_status,omitempty"`
	// Misses are the requests answered from no recording or step (at
	// most maxListedMisses of MissCount); Failures the requests that
	// failed upstream (at most maxListedMisses of FailureCount).
	Misses       []problem `json:"misses"`
	MissCount    int       `json:"miss_count"`
	Failures     []problem `json:"failures"`
	FailureCount int       `json:"failure_count"`
	// Unused lists, by cassette or scenario, what the run never served.
	Unused []unusedGroup `json:"unused"`
	// Faults are the faults injected (--fault, X-Llmproxy-Fault, a
	// session's), in the order of the log, with those picked but not
	// injected and why; at most maxListedMisses of FaultCount.
	Faults     []injected `json:"faults"`
	FaultCount int        `json:"fault_count"`
	// Served sums the usage the recorded answers served from cassettes
	// carry: the tokens replay did not spend (absent for record and mock).
	Served *servedTokens `json:"served_from_cassettes,omitempty"`
}

// problem is one miss or failure.
type problem struct {
	Message      string             `json:"message"`
	Time         *time.Time         `json:"time,omitempty"`
	Cassette     string             `json:"cassette,omitempty"`
	Scenario     string             `json:"scenario,omitempty"`
	Conversation string             `json:"conversation,omitempty"`
	Method       string             `json:"method,omitempty"`
	Path         string             `json:"path,omitempty"`
	Status       int                `json:"status,omitempty"`
	Closest      uint64             `json:"closest,omitempty"`
	Differences  []match.Difference `json:"differences,omitempty"`
	// View says how to open the closest recording once the proxy is
	// gone: the command, then the page.
	View string `json:"view,omitempty"`
}

// injected is one fault a request got, from its log entry.
type injected struct {
	Time         time.Time `json:"time"`
	Cassette     string    `json:"cassette,omitempty"`
	Scenario     string    `json:"scenario,omitempty"`
	Conversation string    `json:"conversation,omitempty"`
	Method       string    `json:"method"`
	Path         string    `json:"path"`
	Interaction  uint64    `json:"interaction,omitempty"`
	Fault        string    `json:"fault"`
	// Request is the request's number in its conversation.
	Request uint64 `json:"request"`
	Status  int    `json:"status,omitempty"`
	// Skipped says why the fault was not injected.
	Skipped string `json:"skipped,omitempty"`
}

// faultsOf lists the faults the log's entries name.
func faultsOf(entries []proxy.LogEntry) (list []injected, n int) {
	list = []injected{}
	for _, e := range entries {
		if e.Fault == "" {
			continue
		}
		if n++; len(list) < maxListedMisses {
			list = append(list, injected{Time: e.Time, Cassette: e.Cassette, Scenario: e.Scenario, Conversation: e.Conversation,
				Method: e.Method, Path: cassette.ProxyPath(e.Upstream, e.Path), Interaction: e.Interaction,
				Fault: e.Fault, Request: e.FaultRequest, Status: e.Status, Skipped: e.FaultSkipped})
		}
	}
	return list, n
}

// unusedGroup is what one cassette or scenario never served. Items lists
// at most maxReportUnused; IDs every unused interaction of a cassette, for
// llmproxy prune.
type unusedGroup struct {
	Cassette string   `json:"cassette,omitempty"`
	Scenario string   `json:"scenario,omitempty"`
	Count    int      `json:"count"`
	Items    []string `json:"items"`
	IDs      []uint64 `json:"ids,omitempty"`
}

// newReport gathers the report of a run of command from what rl
// collected, with the details the proxy's log keeps of each (the closest
// recording and the differences), and what srv never served.
func newReport(ctx context.Context, command string, rl *runLog, srv *proxy.Server) (*runReport, error) {
	r := &runReport{Command: command, Misses: []problem{}, Failures: []problem{}, Unused: []unusedGroup{}, Faults: []injected{}}
	entries, err := srv.Log(ctx)
	if err != nil {
		return nil, err
	}
	used := make([]bool, len(entries))
	find := func(msg string, failure bool) problem {
		p := problem{Message: strings.TrimPrefix(msg, "llmproxy: ")}
		for k, e := range entries {
			if used[k] || e.Miss == "" || (e.Miss != msg && !(failure && strings.HasSuffix(msg, ": "+e.Miss))) {
				continue
			}
			used[k] = true
			t := e.Time
			p.Time, p.Cassette, p.Scenario, p.Conversation = &t, e.Cassette, e.Scenario, e.Conversation
			p.Method, p.Path, p.Status, p.Closest, p.Differences = e.Method, cassette.ProxyPath(e.Upstream, e.Path), e.Status, e.Closest, e.Differences
			if e.Closest > 0 && e.Cassette != "" {
				p.View = fmt.Sprintf("llmproxy view --cassette %s, then open %s", e.Cassette, view.InteractionURL("http://127.0.0.1:7878", "", e.Closest))
			}
			break
		}
		return p
	}
	misses, n := rl.misses.list()
	for _, m := range misses {
		r.Misses = append(r.Misses, find(m, false))
	}
	failures, nf := rl.failures.list()
	for _, m := range failures {
		r.Failures = append(r.Failures, find(m, true))
	}
	r.MissCount, r.FailureCount = n, nf
	r.Faults, r.FaultCount = faultsOf(entries)
	if srv.Mode() == proxy.ModeMock {
		for name, steps := range srv.UnusedSteps() {
			r.Unused = append(r.Unused, unusedGroup{Scenario: name, Count: len(steps), Items: steps[:min(len(steps), maxReportUnused)]})
		}
	} else if srv.Mode() != proxy.ModeRecord {
		unused, err := srv.AllUnused()
		if err != nil {
			return nil, err
		}
		for name, sums := range unused {
			g := unusedGroup{Cassette: name, Count: len(sums), Items: []string{}}
			for _, s := range sums[:min(len(sums), maxReportUnused)] {
				g.Items = append(g.Items, fmt.Sprintf("interaction %d %s %s", s.ID, s.Method, s.Path))
			}
			for _, s := range sums {
				g.IDs = append(g.IDs, s.ID)
			}
			r.Unused = append(r.Unused, g)
		}
	}
	slices.SortFunc(r.Unused, func(a, b unusedGroup) int { return strings.Compare(a.Cassette+a.Scenario, b.Cassette+b.Scenario) })
	if m := srv.Mode(); m == proxy.ModeReplay || m == proxy.ModeAuto {
		if r.Served, err = served(ctx, entries, srv); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// served sums the usage of the interactions the log's entries say were
// served whole from a cassette.
func served(ctx context.Context, entries []proxy.LogEntry, srv *proxy.Server) (*servedTokens, error) {
	s := &servedTokens{}
	for _, e := range entries {
		if e.Interaction == 0 || e.Recorded || e.Incomplete || e.Scenario != "" {
			continue
		}
		i, err := srv.Interaction(ctx, e.Name, e.Interaction)
		if err != nil {
			return nil, fmt.Errorf("cassette %s: %w", e.Cassette, err)
		}
		s.add(tally.Of(i).Usage)
	}
	return s, nil
}

// reportPaths are the HTML and JSON files of --report FILE.
func reportPaths(file string) (html, js string) {
	return file, strings.TrimSuffix(file, ".html") + ".json"
}

// defaultReport is where a -- CMD run without --report writes its report:
// report.html in a new directory under the system's temporary directory.
func defaultReport() (string, error) {
	dir, err := os.MkdirTemp("", "llmproxy-report-")
	if err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	return filepath.Join(dir, "report.html"), nil
}

// write writes the report as HTML to file and as JSON beside it (see
// reportPaths), each whole or not at all.
func (r *runReport) write(file string) error {
	htmlPath, jsonPath := reportPaths(file)
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("report %s: %w", jsonPath, err)
	}
	var page bytes.Buffer
	if err := reportPage.Execute(&page, r); err != nil {
		return fmt.Errorf("report %s: %w", htmlPath, err)
	}
	if err := writeFileAtomic(jsonPath, append(js, '\n')); err != nil {
		return fmt.Errorf("--report %s: %w", jsonPath, err)
	}
	if err := writeFileAtomic(htmlPath, page.Bytes()); err != nil {
		return fmt.Errorf("--report %s: %w", htmlPath, err)
	}
	return nil
}

//go:embed report.html
var reportTemplate string

// reportStyle is the page's one style sheet, inline (the page stands
// alone), allowed by its hash: the page's Content-Security-Policy allows no
// script at all and no other style, as the web view's allows no inline
// script.
const reportStyle = `
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em;padding:0 1em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em}
table{border-collapse:collapse;width:100%;margin:.5em 0}
th,td{border:1px solid #ccc;padding:.3em .5em;text-align:left;vertical-align:top}
code,pre{font-family:ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
.miss{border:1px solid #ddd;border-radius:4px;padding:.5em 1em;margin:1em 0}
.ok{color:#275f27}.bad{color:#a11}
`

// reportPage renders a runReport: html/template escapes every recorded
// value, so script in a recording shows as text.
var reportPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"style": func() template.CSS { return template.CSS(reportStyle) },
	"csp": func() string {
		sum := sha256.Sum256([]byte(reportStyle))
		return "default-src 'none'; script-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
			"'; img-src 'none'; form-action 'none'; base-uri 'none'"
	},
	"join": strings.Join,
}).Parse(reportTemplate))

// reportFunc writes the report of a run once it has ended, given CMD's
// exit status (nil without -- CMD), and returns the closing lines that say
// where it is and what the run served from cassettes.
type reportFunc func(status *int) (closing []string, err error)

// reportWriter returns the reportFunc of a run of command; nil when the
// run writes no report (no -- CMD, no --report).
func reportWriter(command, file string, cr *commandRun, rl *runLog, srv *proxy.Server) reportFunc {
	if cr == nil && file == "" {
		return nil
	}
	return func(status *int) ([]string, error) {
		r, err := newReport(context.Background(), command, rl, srv)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		if cr != nil {
			r.CMD, r.CMDStatus = cr.argv, status
		}
		path := file
		if path == "" {
			if path, err = defaultReport(); err != nil {
				return nil, err
			}
		}
		if err := r.write(path); err != nil {
			return nil, err
		}
		closing := []string{describeReport(path)}
		if r.Served != nil {
			closing = append(closing, r.Served.line())
		}
		return closing, nil
	}
}

// reportFlag defines --report on fs.
func reportFlag(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "report", "", "write a report of the run (misses with the closest recording and the differences, failures upstream, what was never used) "+
		"to this HTML `file`, and as JSON beside it (.json for .html); with -- CMD the default is report.html in a new directory under the temporary directory")
}

// describeReport is the line that names a written report.
func describeReport(path string) string {
	_, js := reportPaths(path)
	return fmt.Sprintf("report of the run: %s (and %s)", path, js)
}
