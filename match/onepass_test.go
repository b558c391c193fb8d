package match_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/match"
)

// onePassRules are the rule sets the one-pass body is checked under: none,
// whole members, paths through arrays, wildcards.
var onePassRules = []match.Rules{
	{},
	{Ignore: []string{"metadata", "messages.#.tool_calls.#.id"}},
	{Ignore: []string{"*"}},
	{Ignore: []string{"messages.1", "contents.*.parts.0.text", "a"}},
	{Ignore: []string{"m*l", "tools.#.function.description", "s?"}, IgnoreByKind: map[string][]string{"gemini": {"contents"}}},
}

// corpusBodies are the []byte arguments of the fuzz corpus files under
// testdata/fuzz.
func corpusBodies(t *testing.T) [][]byte {
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if lit, ok := strings.CutPrefix(line, "[]byte("); ok {
				s, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				out = append(out, []byte(s))
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no corpus bodies under testdata/fuzz")
	}
	return out
}

// capturedRequests are the request bodies captured from the providers.
func capturedRequests() [][]byte {
	var out [][]byte
	for _, name := range fake.CapturedFiles() {
		if strings.HasSuffix(name, ".request.json") {
			out = append(out, fake.Captured(name))
		}
	}
	return out
}

// checkOnePass fails when the body appendBody gives (one pass first) is
// not, byte for byte, the one of the general path, which parses the body:
// the match keys of cassettes indexed before the one pass hash the latter.
func checkOnePass(t *testing.T, m *match.Matcher, r *match.Request) {
	t.Helper()
	got, gs, gerr := m.OnePassBody(r)
	want, ws, werr := m.GeneralBody(r)
	if !bytes.Equal(got, want) || gs != ws || (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("body %.200q (kind %q):\none pass %q structural %v err %v\ngeneral  %q structural %v err %v", r.Body, r.Kind, got, gs, gerr, want, ws, werr)
	}
}

func TestOnePassBodyIsTheGeneralOne(t *testing.T) {
	var bodies [][]byte
	for _, b := range fuzzBodies {
		bodies = append(bodies, []byte(b))
	}
	bodies = append(bodies, corpusBodies(t)...)
	bodies = append(bodies, capturedRequests()...)
	bodies = append(bodies, benchBodies()["1KB"], benchBodies()["20KB"])
	for _, rules := range onePassRules {
		m, err := match.New(rules, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bodies {
			for kind := range uint8(len(fuzzKinds)) {
				checkOnePass(t, m, fuzzRequest(kind, kind%2 == 0, "", b))
			}
		}
	}
}

// FuzzOnePassBody checks that the body matching compares is the same
// whether it is read in one pass or parsed, under an ignore rule.
func FuzzOnePassBody(f *testing.F) {
	for i, b := range fuzzBodies {
		f.Add([]byte(b), uint8(i), i%2 == 0, "metadata")
		f.Add([]byte(b), uint8(i+1), false, "*.#")
	}
	f.Add([]byte(`{"b":{"y":1,"x":[3,{"q":1,"p":2}]},"a":"\u00e9","a":"\ud800x"}`), uint8(0), true, "b.x.1.q")
	f.Add([]byte(`{"m":[{"id":1,"t":2},{"t":1e1000001,"id":2}]}`), uint8(1), false, "m.#.t")
	f.Fuzz(func(t *testing.T, body []byte, kind uint8, declared bool, ignore string) {
		m, err := match.New(match.Rules{Ignore: []string{ignore}}, nil)
		if err != nil {
			return
		}
		checkOnePass(t, m, fuzzRequest(kind, declared, "", body))
	})
}
