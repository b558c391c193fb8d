package wire

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// unquoteSimple gives what json.Unmarshal gives for every token it takes,
// and takes the common ones: plain text and one-character escapes.
func TestUnquoteSimple(t *testing.T) {
	takes := []string{`""`, `"a"`, `"{\"location\":\"Paris\"}"`, `"a\\b\/c\n\t\r\b\f"`, `"日本"`, `"it's"`}
	for _, q := range takes {
		if _, ok := unquoteSimple([]byte(q)); !ok {
			t.Errorf("%s: not taken", q)
		}
	}
	tokens := []string{`a`, `é`, `"`, `\"`, `\\`, `\/`, `\n`, `\u00e9`, `\ud83d\ude00`, `\x`, "\x01", "\xff", `\`, ` `}
	rnd := rand.New(rand.NewPCG(7, 8))
	for range 50000 {
		q := []byte{'"'}
		for range rnd.IntN(8) {
			q = append(q, tokens[rnd.IntN(len(tokens))]...)
		}
		if rnd.IntN(10) > 0 {
			q = append(q, '"')
		}
		got, ok := unquoteSimple(q)
		if !ok {
			continue
		}
		var want string
		if err := json.Unmarshal(q, &want); err != nil {
			t.Fatalf("%q: taken as %q, but json.Unmarshal refuses it: %v", q, got, err)
		}
		if !bytes.Equal(got, []byte(want)) {
			t.Fatalf("%q: %q, json.Unmarshal gives %q", q, got, want)
		}
	}
}
