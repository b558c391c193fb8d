package jsonvalue_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
)

// quotedStrings are seeds for the quoting checks: printable ASCII, the
// escaped bytes, text with typographic punctuation, runes strconv escapes
// (controls, DEL, format and private-use characters, no-break space), and
// bytes that are not UTF-8.
var quotedStrings = []string{
	"", "plain", `say "hi" \ bye`, "tab\tnew\nline\r\a\b\f\v\x00\x1f\x7f",
	"It’s a pelican — not a “heron”…", "é", "e\u0301", "日本語のテキスト", "😀 emoji 🦤",
	"\u00a0nbsp", "zero\u200bwidth", "\ufeffbom", "\ue000private", "\U0010ffff", "\ufffd", "\u2028\u2029",
	"\xff\xfe", "a\xc3", "\xed\xa0\x80surrogate", "\xc0\xafoverlong", "\xf4\x90\x80\x80beyond",
	strings.Repeat("long ascii run ", 20) + "—" + strings.Repeat("and more ", 20),
}

// Every match key hashes strings as strconv.AppendQuote spells them.
func TestAppendStringIsStrconvQuote(t *testing.T) {
	for _, s := range quotedStrings {
		if got, want := string(jsonvalue.AppendString([]byte("x"), s)), "x"+strconv.Quote(s); got != want {
			t.Errorf("%q: AppendString %s, strconv %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range quotedStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(jsonvalue.AppendString(nil, s)), strconv.Quote(s); got != want {
			t.Fatalf("%q: AppendString %s, strconv %s", s, got, want)
		}
	})
}

// BenchmarkAppendString quotes a 2 KB text of printable ASCII with a few
// typographic marks, as an assistant's answer often is, against the same
// text in ASCII only.
func BenchmarkAppendString(b *testing.B) {
	ascii := strings.Repeat("The pelican said it's fine - really. ", 55)
	typographic := strings.ReplaceAll(strings.ReplaceAll(ascii, "'", "’"), " - ", " — ")
	for name, s := range map[string]string{"ascii": ascii, "typographic": typographic} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			var out []byte
			for b.Loop() {
				out = jsonvalue.AppendString(out[:0], s)
			}
		})
	}
}
