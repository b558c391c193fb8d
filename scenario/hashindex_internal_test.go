package scenario

import (
	"fmt"
	"hash/maphash"
	"slices"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

// TestHashIndex files steps under keys (one key for several steps, several
// keys, none) and finds each key's steps in the order filed, and none for
// a key not filed; with full fingerprints, and with fingerprints of one
// bit and none, where keys whose probes meet share a slot.
func TestHashIndex(t *testing.T) {
	seed := maphash.MakeSeed()
	var keys []string
	var steps []int
	for i := range 1000 {
		keys, steps = append(keys, fmt.Sprint("k", i%700)), append(steps, i)
	}
	tests := []struct {
		name  string
		keys  []string
		steps []int
		key   string
		want  []int
	}{
		{"empty index", nil, nil, "a", nil},
		{"one key", []string{"a"}, []int{3}, "a", []int{3}},
		{"not filed", []string{"a"}, []int{3}, "b", nil},
		{"empty key", []string{"", "a"}, []int{0, 1}, "", []int{0}},
		{"several steps under a key, in order", []string{"a", "b", "a"}, []int{4, 5, 2}, "a", []int{4, 2}},
		{"many keys, one repeated", keys, steps, "k5", []int{5, 705}},
		{"many keys, one alone", keys, steps, "k699", []int{699}},
		{"many keys, not filed", keys, steps, "k700", nil},
	}
	for _, tt := range tests {
		for _, fp := range []uint{32, 1, 0} {
			t.Run(fmt.Sprintf("%s/fingerprint=%d", tt.name, fp), func(t *testing.T) {
				ix := buildHashIndex(seed, tt.keys, tt.steps, fp)
				var one [1]int
				got := ix.lookup(ix.hash(tt.key), &one)
				// a step of another key sharing the hash may come too: only
				// the key's own steps are checked, in order
				var own []int
				for _, s := range got {
					if k := slices.Index(tt.steps, s); k >= 0 && tt.keys[k] == tt.key {
						own = append(own, s)
					}
				}
				if !slices.Equal(own, tt.want) {
					t.Errorf("lookup(%q) = %v, want %v", tt.key, got, tt.want)
				}
				if len(got) > 0 && cap(got) != len(got) {
					t.Errorf("lookup(%q) returns a slice with room to append into the index", tt.key)
				}
			})
		}
	}
}

// TestWrittenHash checks that a written answer hashes as its index key,
// writerKey of its text and call names, does.
func TestWrittenHash(t *testing.T) {
	ix := newHashIndex(maphash.MakeSeed(), nil, nil)
	for _, w := range []written{
		{text: ""},
		{text: "hello"},
		{text: "", calls: []wire.ToolCall{{Name: "weather"}}},
		{text: "ok", calls: []wire.ToolCall{{Name: "a"}, {Name: "b"}, {Name: ""}}},
	} {
		names := make([]string, len(w.calls))
		for i, c := range w.calls {
			names[i] = c.Name
		}
		if got, want := w.hash(&ix), ix.hash(writerKey(w.text, names)); got != want {
			t.Errorf("%+v: hash %x, want %x (of writerKey)", w, got, want)
		}
	}
}
