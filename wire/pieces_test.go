package wire

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unicode/utf8"
)

// The stream pieces are cut as a rune-by-rune reading cuts them: a word
// each (spaces before it included), or chunk characters each; they join
// back into the text, and their slice is made once, with room for them
// all.
func TestPieces(t *testing.T) {
	// byRune is the plain reading the writers' pieces must equal.
	byRune := func(s string, chunk int) []string {
		var out []string
		if chunk > 0 {
			for len(s) > 0 {
				end, n := 0, 0
				for end < len(s) && n < chunk {
					_, size := utf8.DecodeRuneInString(s[end:])
					end, n = end+size, n+1
				}
				out, s = append(out, s[:end]), s[end:]
			}
			return out
		}
		start := 0
		for i, r := range s {
			if r == ' ' && i > start && s[i-1] != ' ' {
				out, start = append(out, s[start:i]), i
			}
		}
		if start < len(s) {
			out = append(out, s[start:])
		}
		return out
	}
	texts := []string{"", " ", "   ", "It is 21 °C", " leading", "trailing ", "two  spaces", "日本語 の テキスト", "a", "a b", "\xff \xfe"}
	rnd := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{" ", " ", "a", "b", "é", "日", "\xff", "\n"}
	for range 500 {
		var b []byte
		for range rnd.IntN(40) {
			b = append(b, alphabet[rnd.IntN(len(alphabet))]...)
		}
		texts = append(texts, string(b))
	}
	for _, s := range texts {
		for _, chunk := range []int{0, 1, 3} {
			got := pieces(s, chunk)
			if want := byRune(s, chunk); !slices.Equal(got, want) {
				t.Fatalf("pieces(%q, %d) = %q, want %q", s, chunk, got, want)
			}
			if len(got) > 0 && cap(got) < len(got) {
				t.Fatalf("pieces(%q, %d): capacity %d", s, chunk, cap(got))
			}
		}
	}
	if raceEnabled {
		return // the race detector allocates on its own
	}
	if n := testing.AllocsPerRun(100, func() { pieces("It is 21 °C in Paris, and sunny", 0) }); n != 1 {
		t.Errorf("pieces allocates %v times, want once (the slice)", n)
	}
	kept := make([]string, 0, 16)
	if n := testing.AllocsPerRun(100, func() { kept = appendPieces(kept[:0], "It is 21 °C in Paris, and sunny", 0) }); n != 0 {
		t.Errorf("appendPieces into a list with room allocates %v times, want none", n)
	}
}
