package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/exampletest"
	"github.com/llmproxy/llmproxy/proxy"
)

// lsIDs counts a cassette's interactions through ls.
func lsCount(t *testing.T, cas string) int {
	t.Helper()
	code, out, stderr := cli(t, "ls", "--cassette", cas)
	if code != 0 {
		t.Fatalf("ls: %d %s", code, stderr)
	}
	return strings.Count(out, "\n") - 1
}

// TestPruneRunReport: a replay run's report lists what it did not use;
// prune drops exactly that, and the same run then replays with nothing
// unused.
func TestPruneRunReport(t *testing.T) {
	exampletest.Unsetenv(t, "LLMPROXY_LISTEN")
	dir := t.TempDir()
	cas := filepath.Join(dir, "three.cassette")
	sampleCassette(t, cas, 3)
	report := filepath.Join(dir, "run.html")
	child := []string{"--", self(t)}
	t.Setenv(childRole, "post="+hitBody)
	if code, _, stderr := cli(t, append([]string{"replay", "--cassette", cas, "--report", report}, child...)...); code != 0 {
		t.Fatalf("replay: %d %s", code, stderr)
	}
	code, out, stderr := cli(t, "prune", "--cassette", cas, "--used", filepath.Join(dir, "run.json"))
	if code != 0 {
		t.Fatalf("prune: %d %s", code, stderr)
	}
	for _, want := range []string{"removed interaction 2 POST /v1/chat/completions 200\n", "removed interaction 3 POST", "removed 2 interaction(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("prune's output lacks %q:\n%s", want, out)
		}
	}
	if n := lsCount(t, cas); n != 1 {
		t.Errorf("%d interactions left, want 1", n)
	}
	if code, _, stderr := cli(t, append([]string{"replay", "--cassette", cas, "--fail-on-unused"}, child...)...); code != 0 {
		t.Errorf("replay after prune: %d %s", code, stderr)
	}
}

// TestPruneUnusedAPI: GET /_llmproxy/unused saved as JSON is the other
// shape prune takes.
func TestPruneUnusedAPI(t *testing.T) {
	dir := t.TempDir()
	cas := filepath.Join(dir, "three.cassette")
	sampleCassette(t, cas, 3)
	c, err := cassette.Open(cas, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(proxy.Config{Mode: proxy.ModeReplay, Cassette: c})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	get := func(method, path, body string) []byte {
		req, _ := http.NewRequestWithContext(context.Background(), method, srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return b
	}
	get("POST", "/v1/chat/completions", strings.Replace(hitBody, "question 0", "question 1", 1))
	unused := get("GET", "/_llmproxy/unused?limit=1000", "")
	srv.Close()
	p.Close()
	c.Close()
	used := filepath.Join(dir, "unused.json")
	os.WriteFile(used, unused, 0o644)
	code, out, stderr := cli(t, "prune", "--cassette", cas, "--used", used)
	if code != 0 {
		t.Fatalf("prune: %d %s", code, stderr)
	}
	if !strings.Contains(out, "removed interaction 1 ") || !strings.Contains(out, "removed interaction 3 ") || strings.Contains(out, "interaction 2 ") {
		t.Errorf("prune removed other than 1 and 3:\n%s", out)
	}
	if n := lsCount(t, cas); n != 1 {
		t.Errorf("%d interactions left, want 1", n)
	}
}

// TestPruneBadInput: a --used file prune cannot use is a clear error,
// and the cassette stays byte-identical.
func TestPruneBadInput(t *testing.T) {
	dir := t.TempDir()
	cas := filepath.Join(dir, "three.cassette")
	sampleCassette(t, cas, 3)
	before, _ := os.ReadFile(cas)
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	q := func(s string) string { return strings.ReplaceAll(s, "CAS", cas) }
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no --used", []string{"prune", "--cassette", cas}, 2, "--used is required"},
		{"missing file", []string{"prune", "--cassette", cas, "--used", filepath.Join(dir, "none.json")}, 1, "none.json"},
		{"not JSON", []string{"prune", "--cassette", cas, "--used", write("bad.json", `{"unused": [`)}, 1, "bad.json: unexpected end of JSON input"},
		{"a list", []string{"prune", "--cassette", cas, "--used", write("list.json", `[1,2]`)}, 1, "list.json: json: cannot unmarshal array"},
		{"no unused", []string{"prune", "--cassette", cas, "--used", write("other.json", `{"interactions": []}`)}, 1, `other.json: no "unused" list`},
		{"neither shape", []string{"prune", "--cassette", cas, "--used", write("neither.json", `{"unused": []}`)}, 1, `neither "command" (a run report) nor "total"`},
		{"a page", []string{"prune", "--cassette", cas, "--used", write("page.json", q(`{"cassette":"CAS","total":3,"unused":[{"id":1}],"next":1}`))}, 1, "holds 1 of 3 unused interactions, one page"},
		{"item without id", []string{"prune", "--cassette", cas, "--used", write("noid.json", q(`{"cassette":"CAS","total":1,"unused":[{"path":"/x"}]}`))}, 1, `unused[0] has no "id"`},
		{"listing error", []string{"prune", "--cassette", cas, "--used", write("err.json", q(`{"cassette":"CAS","total":0,"unused":[],"error":{"type":"cassette_error"}}`))}, 1, "ended with an error"},
		{"another cassette", []string{"prune", "--cassette", cas, "--used", write("another.json", `{"cassette":"/elsewhere/x.cassette","total":1,"unused":[{"id":1}]}`)}, 1, "of /elsewhere/x.cassette, not of"},
		{"ids not in the cassette", []string{"prune", "--cassette", cas, "--used", write("far.json", q(`{"cassette":"CAS","total":2,"unused":[{"id":2},{"id":99}]}`))}, 1, "holds interactions 1 to 3, not 99"},
		{"record report", []string{"prune", "--cassette", cas, "--used", write("rec.json", `{"command":"record","unused":[]}`)}, 1, `the report of a "record" run lists no unused`},
		{"report of another cassette", []string{"prune", "--cassette", cas, "--used", write("rep.json", `{"command":"replay","unused":[{"cassette":"other.cassette","count":1,"items":["interaction 1 POST /v1/chat/completions"]}]}`)}, 1, `["other.cassette"], not of`},
		{"report cut short", []string{"prune", "--cassette", cas, "--used", write("cut.json", q(`{"command":"replay","unused":[{"cassette":"CAS","count":3,"items":["interaction 1 POST /v1/chat/completions"]}]}`))}, 1, "lists 1 of 3 unused interactions and not their ids"},
		{"report ids short", []string{"prune", "--cassette", cas, "--used", write("short.json", q(`{"command":"auto","unused":[{"cassette":"CAS","count":3,"items":[],"ids":[1]}]}`))}, 1, "1 ids for a count of 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := cli(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d saying %q", code, stderr, tt.code, tt.want)
			}
			checkOneLine(t, tt.name, stderr)
			if after, _ := os.ReadFile(cas); !bytes.Equal(before, after) {
				t.Fatalf("the cassette changed")
			}
		})
	}
	// An older report that lists every unused item, without ids, is read
	// from its items.
	old := write("old.json", q(`{"command":"replay","unused":[{"cassette":"CAS","count":1,"items":["interaction 2 POST /v1/chat/completions"]}]}`))
	if code, out, stderr := cli(t, "prune", "--cassette", cas, "--used", old); code != 0 || !strings.Contains(out, "removed interaction 2 ") {
		t.Errorf("prune from items: %d %s %s", code, out, stderr)
	}
}
