package jsonvalue

import (
	"bytes"
	"encoding/json"
	"testing"
)

var unquoteSeeds = []string{
	`""`, `"plain"`, `"data: {\"a\":1}\n\n"`, `"tab\tquote\"slash\/back\\"`, `"\b\f\r"`,
	`"\u00e9\u2028\u0000"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`, `"\ud83dx"`, `"\ud83d\u0041"`,
	`"héllo ✓ 😀"`, "\"raw\x01control\"", "\"bad\xffutf8\"", `"\x"`, `"\u12"`, `"\u12G4"`, `"stray"quote"`,
	`"ends with backslash\"`, `"`, `x`, `"\U0041"`,
}

// Unquote agrees with encoding/json on every string it accepts, and accepts
// every well-formed one.
func checkUnquote(t *testing.T, lit []byte) {
	got, ok := Unquote(lit)
	var want string
	err := json.Unmarshal(lit, &want)
	if !ok {
		if inner := plain(lit); err == nil && inner != nil && want == string(inner) {
			t.Errorf("Unquote(%q) refused a literal encoding/json reads as %q", lit, want)
		}
		return
	}
	if err != nil {
		t.Fatalf("Unquote(%q) = %q, but encoding/json fails: %v", lit, got, err)
	}
	if string(got) != want {
		t.Fatalf("Unquote(%q) = %q, encoding/json: %q", lit, got, want)
	}
}

// plain is the content of a literal with no escape, nothing around its
// quotes and no quote inside, which unquote must accept when it is valid;
// nil for any other.
func plain(lit []byte) []byte {
	if len(lit) >= 2 && lit[0] == '"' && lit[len(lit)-1] == '"' && !bytes.ContainsAny(lit[1:len(lit)-1], "\\\"") {
		return lit[1 : len(lit)-1]
	}
	return nil
}

func TestUnquoteMatchesEncodingJSON(t *testing.T) {
	for _, s := range unquoteSeeds {
		checkUnquote(t, []byte(s))
	}
	// Whatever encoding/json writes, unquote reads back.
	for _, s := range []string{"data: {\"x\":[1,2]}\r\n\r\n", "\u2028<&>\x00\x1f", "😀 and \\ and /"} {
		b, _ := json.Marshal(s)
		if got, ok := Unquote(b); !ok || string(got) != s {
			t.Errorf("Unquote(%s) = %q, %v; want %q", b, got, ok, s)
		}
	}
}

func FuzzUnquote(f *testing.F) {
	for _, s := range unquoteSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkUnquote)
}
