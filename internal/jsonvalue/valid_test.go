package jsonvalue_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
)

// validEdges are documents at the edges of JSON's grammar.
var validEdges = []string{
	``, ` `, `{}`, `[]`, `""`, `0`, `-0`, `1.5e+3`, `true`, `false`, `null`,
	`{"a":1}`, ` {"a" : [1, 2, {"b":null}] } `, "{\"a\":1}\n", "\t[\r\n]",
	`01`, `-`, `-a`, `1.`, `.5`, `1e`, `1e+`, `+1`, `0x1`, `1.5E-0`, `-01`, `1true`, `0.0e0`, `-0.5E+12`,
	`tru`, `nul`, `falsey`, `True`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a"}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`,
	`{"a":1"b":2}`, `[1 2]`, `{"a":1}}`, `[[]`, `"a" "b"`, `{} {}`, `[}`, `{]`, `{"a":[}]}`, `[{]}`,
	`"\u00e9"`, `"\u00g9"`, `"\u12"`, `"\x"`, `"\/\b\f\n\r\t\"\\"`, `"a` + "\x01" + `"`, `"a` + "\x7f" + `"`,
	"\"\xff\xfe\"", "\"\xc3\"", "\xef\xbb\xbf{}", `"unterminated`, `{"a":"b\"}`, "{\"a\":1}\x00", `"\`, `"\u`,
	"\u00a0{}", `[1,2,3]garbage`, `{"a":[1,{"b":"]}"}]}`, "\v{}", "{}\f",
	strings.Repeat("[", jsonvalue.ValidMaxDepth) + strings.Repeat("]", jsonvalue.ValidMaxDepth),
	strings.Repeat("[", jsonvalue.ValidMaxDepth+1) + strings.Repeat("]", jsonvalue.ValidMaxDepth+1),
	strings.Repeat(`{"a":`, jsonvalue.ValidMaxDepth) + "1" + strings.Repeat("}", jsonvalue.ValidMaxDepth),
	strings.Repeat(`{"a":`, jsonvalue.ValidMaxDepth+1) + "1" + strings.Repeat("}", jsonvalue.ValidMaxDepth+1),
	strings.Repeat("[", 64) + strings.Repeat("]", 63) + "}", strings.Repeat("[{\"k\":", 70) + "0" + strings.Repeat("}]", 70),
}

// Valid accepts a document exactly when encoding/json's Valid does: on the
// grammar's edges, on documents made of JSON's tokens in random order, and
// on those documents cut or with a byte changed.
func TestValidIsJSONValid(t *testing.T) {
	check := func(s string) {
		t.Helper()
		if got, want := jsonvalue.Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Fatalf("%.80q: Valid %v, json.Valid %v", s, got, want)
		}
	}
	for _, s := range validEdges {
		check(s)
	}
	tokens := []string{`{`, `}`, `[`, `]`, `,`, `:`, ` `, "\n", `"k"`, `"a\"b"`, `"\u00e9"`, `"\q"`, `1`, `-0.5e3`, `01`, `true`, `nul`, `null`, `"`, "\x01"}
	rnd := rand.New(rand.NewPCG(5, 6))
	valid := 0
	for range 200000 {
		var b strings.Builder
		for range 1 + rnd.IntN(12) {
			b.WriteString(tokens[rnd.IntN(len(tokens))])
		}
		s := b.String()
		check(s)
		if json.Valid([]byte(s)) {
			valid++
			for k := range len(s) {
				check(s[:k])
				check(s[:k] + "x" + s[k+1:])
			}
		}
	}
	if valid < 1000 {
		t.Fatalf("only %d of the random documents were valid: the test says little", valid)
	}
}

// FuzzValid: go test -fuzz FuzzValid ./internal/jsonvalue
func FuzzValid(f *testing.F) {
	for _, s := range validEdges {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := jsonvalue.Valid(b), json.Valid(b); got != want {
			t.Fatalf("%.80q: Valid %v, json.Valid %v", b, got, want)
		}
	})
}
