package jsonvalue_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/internal/jsonvalue"
)

// general is the canonical form by the general path: parse, then walk.
func general(ig jsonvalue.Ignore, doc []byte) ([]byte, error) {
	v, err := jsonvalue.Parse(doc)
	if err != nil {
		return nil, err
	}
	return ig.AppendCanonical(nil, v)
}

func ignoreOf(t testing.TB, paths ...string) jsonvalue.Ignore {
	var ig jsonvalue.Ignore
	for _, p := range paths {
		pp, ok := jsonvalue.ParsePattern(p)
		if !ok {
			t.Skipf("pattern %q does not parse", p)
		}
		ig = append(ig, pp)
	}
	return ig
}

// checkOnePass fails when AppendCanonicalBytes disagrees with the general
// path: it must give the same bytes whenever it answers, and answer for
// every object or array the general path canonicalises.
func checkOnePass(t *testing.T, ig jsonvalue.Ignore, doc []byte) {
	t.Helper()
	prefix := []byte("prefix:")
	got, ok := ig.AppendCanonicalBytes(append([]byte(nil), prefix...), doc)
	want, err := general(ig, doc)
	trimmed := bytes.TrimLeft(doc, " \t\r\n")
	container := len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')
	switch {
	case ok && err != nil:
		t.Fatalf("%.200q: one pass gave %q, the general path %v", doc, got, err)
	case ok && !bytes.Equal(got[len(prefix):], want):
		t.Fatalf("%.200q:\none pass %q\ngeneral  %q", doc, got[len(prefix):], want)
	case !ok && !bytes.Equal(got, prefix):
		t.Fatalf("%.200q: refused, but changed the buffer to %q", doc, got)
	case !ok && err == nil && container:
		t.Fatalf("%.200q: refused an object or array the general path canonicalises as %q", doc, want)
	case !ok && container && err != nil && !errors.Is(err, jsonvalue.ErrMalformed) && !errors.Is(err, jsonvalue.ErrTooDeep) && !errors.Is(err, jsonvalue.ErrNumberRange):
		t.Fatalf("%.200q: general path error %v", doc, err)
	}
}

var onePassDocs = []string{
	`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"What's the weather in Paris?"}],"temperature":0.7}`,
	`{"b":{"y":1,"x":[3,{"q":1,"p":2}]},"a":"\u00e9","a":"\ud800x","c":"\ud83d\ude00\udc00\ud800\ud800\udc00"}`,
	`{"edges":"\udbff\udfff\ud800\udc00\ud7ff\ue000\udc00x\ud800\u0041","\ud800":"\u0000\u001f\u007f\u0080\uffff"}`,
	` [ 1 , [ 2 , [ 3 ] ] , { } , [ ] , null , true , false , -0.0e-0 , 1E+2 ] `,
	`{"dup":2,"dup":1,"":0,"\u0000":1,"é":2,"e\u0301":3}`,
	`{"tools":[{"function":{"arguments":"{\"location\":\"Paris\"}","name":"weather"}}],"s":"tab\tnew\nquote\"slash\/back\\"}`,
	"{\"bad utf8\":\"\xff\xfe\",\"del\":\"\x7f\"}",
	`{"big":1e1000000,"long":0.30000000000000004,"tiny":5e-324,"n":12345678901234567890123}`,
	`{"out":1e1000001}`, `[1e1000001]`, `{"a":[1,{"b":2e9999999}]}`,
	`{"a":1}x`, `{"a":01}`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":tru}`, `{"a":"\x"}`, `{"a":"\u12"}`, "{\"a\":\"\x01\"}",
	`"scalar"`, `42`, `true`, ``, `   `,
	strings.Repeat("[", 128) + strings.Repeat("]", 128),
	strings.Repeat("[", 129) + strings.Repeat("]", 129),
	`{"a":` + strings.Repeat("[", 127) + `"x"` + strings.Repeat("]", 127) + `}`,
}

var onePassIgnores = [][]string{
	nil, {"metadata"}, {"*"}, {"a"}, {"out"}, {"a.1.b"}, {"b.x.#.q", "dup"}, {"#"}, {"*.#"}, {"tools.#.function.arguments"}, {"?", "b*"},
}

func TestAppendCanonicalBytesIsTheGeneralPath(t *testing.T) {
	var docs [][]byte
	for _, d := range onePassDocs {
		docs = append(docs, []byte(d))
	}
	for _, name := range fake.CapturedFiles() {
		if strings.HasSuffix(name, ".json") {
			docs = append(docs, fake.Captured(name))
		}
	}
	for _, paths := range onePassIgnores {
		ig := ignoreOf(t, paths...)
		for _, d := range docs {
			checkOnePass(t, ig, d)
		}
	}
}

// The scan reads a string eight bytes at a time: every escape and every
// byte outside printable ASCII is checked at each offset from a word's
// start, in names and in values, and near the end of the document.
func TestAppendCanonicalBytesAtEveryOffset(t *testing.T) {
	specials := []string{`\"`, `\\`, `\n`, `\t`, `\/`, `\u00e9`, `\u0041`, `\ud83d\ude00`, `\ud800`, "é", "\x7f", "\xff", `\"\"`, `\\\"`, `\\"`, "\x01", `\x`, `\u12`}
	for _, sp := range specials {
		for before := range 18 {
			for after := range 10 {
				lit := `"` + strings.Repeat("a", before) + sp + strings.Repeat("b", after) + `"`
				for _, doc := range []string{`{"k":` + lit + `,"j":1}`, `{` + lit + `:1,"j":2}`, `[` + lit + `]`, `[1,` + lit} {
					checkOnePass(t, nil, []byte(doc))
				}
			}
		}
	}
}

// The one pass must be the path taken for real requests, not a fallback
// that is never used.
func TestAppendCanonicalBytesAnswersForCapturedRequests(t *testing.T) {
	n := 0
	for _, name := range fake.CapturedFiles() {
		if !strings.HasSuffix(name, ".request.json") {
			continue
		}
		n++
		if _, ok := jsonvalue.Ignore(nil).AppendCanonicalBytes(nil, fake.Captured(name)); !ok {
			t.Errorf("%s: refused", name)
		}
	}
	if n == 0 {
		t.Fatal("no captured requests")
	}
}

func FuzzAppendCanonicalBytes(f *testing.F) {
	for i, d := range onePassDocs {
		paths := append(onePassIgnores[i%len(onePassIgnores)], "", "")
		f.Add([]byte(d), paths[0], paths[1])
	}
	f.Fuzz(func(t *testing.T, doc []byte, p1, p2 string) {
		var paths []string
		for _, p := range []string{p1, p2} {
			if _, ok := jsonvalue.ParsePattern(p); ok {
				paths = append(paths, p)
			}
		}
		checkOnePass(t, ignoreOf(t, paths...), doc)
	})
}
