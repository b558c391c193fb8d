package wire

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"
)

// indentSeeds are compact documents with what layout depends on: nesting,
// empty objects and arrays, brackets, commas, colons and escapes inside
// strings, and numbers as they are spelled.
var indentSeeds = []string{
	`{}`, `[]`, `0`, `"x"`, `null`,
	`{"a":1,"b":[1,2,{}],"c":{"d":[]}}`,
	`[[[]],[{}],{"":""}]`,
	`{"s":"a \"quoted\" {bracket} [x], y: z\\","n":-1.50e+10}`,
	`{"e":"\u00e9\n\t","u":"\\u0022"}`,
	`[{"a":[{"b":[{"c":true}]}]},false,null]`,
}

// TestIndentCompactIsJSONIndent holds the one-pass layout to json.Indent's
// bytes, on the seeds and on every JSON document the error golden files
// and the captured provider bodies hold, compacted first, with both
// indents the writers use.
func TestIndentCompactIsJSONIndent(t *testing.T) {
	docs := append([]string(nil), indentSeeds...)
	files, _ := filepath.Glob(filepath.Join("testdata", "errorbody", "*.json"))
	captured, _ := filepath.Glob(filepath.Join("..", "internal", "fake", "captured", "*.json"))
	files = append(files, captured...)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c bytes.Buffer
		if json.Compact(&c, b) == nil {
			docs = append(docs, c.String())
		}
	}
	if len(docs) == len(indentSeeds) {
		t.Fatal("no JSON document among the golden files")
	}
	for _, d := range docs {
		for _, in := range []string{"  ", "    "} {
			checkIndent(t, []byte(d), in)
		}
	}
}

// TestIndentedFallsBack: a document with white space between its tokens
// goes through json.Indent, and one it refuses is kept as it is.
func TestIndentedFallsBack(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{ "a" : [ 1 , 2 ] }`, "{\n  \"a\": [\n    1,\n    2\n  ]\n}"},
		{`{"a": oops}`, `{"a": oops}`},
	} {
		if got := indented([]byte(tc.in), "  "); string(got) != tc.want {
			t.Errorf("indented(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{`{"a":1`, `]`, `"open`, `{"a":[1]}}`} {
		if _, ok := indentCompact(nil, []byte(bad), "  "); ok {
			t.Errorf("indentCompact(%q): ok, want refused", bad)
		}
	}
}

func FuzzIndentCompact(f *testing.F) {
	for _, s := range indentSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var c bytes.Buffer
		if json.Compact(&c, doc) != nil {
			return
		}
		checkIndent(t, c.Bytes(), "  ")
	})
}

// checkIndent fails t unless indentCompact lays out the compact, valid
// document doc as json.Indent does.
func checkIndent(t *testing.T, doc []byte, in string) {
	t.Helper()
	var want bytes.Buffer
	if err := json.Indent(&want, doc, "", in); err != nil {
		t.Fatalf("json.Indent(%q): %v", doc, err)
	}
	got, ok := indentCompact(nil, doc, in)
	if !ok || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("indentCompact(%q, %q) = %q, %v; json.Indent gives %q", doc, in, got, ok, want.Bytes())
	}
}

// BenchmarkIndent lays out a captured chat completion with the one-pass
// layout and with json.Indent.
func BenchmarkIndent(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("..", "internal", "fake", "captured", "openai-chat-toolcalls.response.json"))
	if err != nil {
		b.Fatal(err)
	}
	var c bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		b.Fatal(err)
	}
	doc := c.Bytes()
	b.Run("one-pass", func(b *testing.B) {
		for b.Loop() {
			indentCompact(nil, doc, "  ")
		}
	})
	b.Run("json.Indent", func(b *testing.B) {
		for b.Loop() {
			var buf bytes.Buffer
			_ = json.Indent(&buf, doc, "", "  ")
		}
	})
}

// TestJSONWriterIndents holds jsonw's indented layout to json.Indent's
// bytes of the compact document it writes otherwise, on the seeds and the
// golden and captured documents, with both indents the writers use.
func TestJSONWriterIndents(t *testing.T) {
	docs := append([]string(nil), indentSeeds...)
	files, _ := filepath.Glob(filepath.Join("testdata", "errorbody", "*.json"))
	captured, _ := filepath.Glob(filepath.Join("..", "internal", "fake", "captured", "*.json"))
	for _, f := range append(files, captured...) {
		if b, err := os.ReadFile(f); err == nil && json.Valid(b) {
			docs = append(docs, string(b))
		}
	}
	var walk func(w *jsonw, v gjson.Result)
	walk = func(w *jsonw, v gjson.Result) {
		switch {
		case v.IsObject():
			w.Obj()
			v.ForEach(func(k, m gjson.Result) bool {
				w.K(k.Str)
				walk(w, m)
				return true
			})
			w.End()
		case v.IsArray():
			w.Arr()
			v.ForEach(func(_, e gjson.Result) bool {
				walk(w, e)
				return true
			})
			w.End()
		case v.Type == gjson.String:
			w.Str(v.Str)
		default:
			w.Raw([]byte(v.Raw))
		}
	}
	for _, d := range docs {
		compact := &jsonw{}
		walk(compact, gjson.Parse(d))
		for _, in := range []string{"  ", "    "} {
			var want bytes.Buffer
			if err := json.Indent(&want, compact.Bytes(), "", in); err != nil {
				t.Fatalf("%.60s: %v", compact.Bytes(), err)
			}
			got := &jsonw{indent: in}
			walk(got, gjson.Parse(d))
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("indent %q:\n%s\nwant\n%s", in, got.Bytes(), want.Bytes())
			}
		}
	}
}
