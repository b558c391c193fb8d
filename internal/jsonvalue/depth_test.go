package jsonvalue_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
)

// TestDepth: brackets inside strings (escaped quotes included) do not
// count, the scan stops at the first level past the limit, and a document
// need not be valid.
func TestDepth(t *testing.T) {
	tests := []struct {
		doc          string
		limit        int
		deepest, at  int
		nestedDeeper bool
	}{
		{`{}`, 5, 1, 2, false},
		{`{"a":[1,{"b":[]}]}`, 5, 4, 18, false},
		{`{"a":"[[[[{{{{\"[["}`, 2, 1, 20, false},
		{`[[[[`, 2, 3, 2, true},
		{`[[]][[[]]]`, 3, 3, 10, false},
		{strings.Repeat("[", 100), 10, 11, 10, true},
		{`not json ] ]`, 1, 0, 12, false},
	}
	for _, tt := range tests {
		deepest, at := jsonvalue.Depth([]byte(tt.doc), tt.limit)
		if deepest != tt.deepest || at != tt.at {
			t.Errorf("Depth(%s, %d) = %d, %d; want %d, %d", tt.doc, tt.limit, deepest, at, tt.deepest, tt.at)
		}
		if got := jsonvalue.NestedDeeper([]byte(tt.doc), tt.limit); got != tt.nestedDeeper {
			t.Errorf("NestedDeeper(%s, %d) = %v, want %v", tt.doc, tt.limit, got, tt.nestedDeeper)
		}
	}
}

// Depth finds what a byte-by-byte reading finds, on documents of brackets,
// quotes, backslashes and letters in any order, valid or not.
func TestDepthAsBytewise(t *testing.T) {
	bytewise := func(b []byte, limit int) (deepest, at int) {
		d, inString := 0, false
		for i := 0; i < len(b); i++ {
			c := b[i]
			if inString {
				switch c {
				case '\\':
					i++
				case '"':
					inString = false
				}
				continue
			}
			switch c {
			case '"':
				inString = true
			case '[', '{':
				if d++; d > deepest {
					if deepest = d; d > limit {
						return d, i
					}
				}
			case ']', '}':
				d--
			}
		}
		return deepest, len(b)
	}
	// Strings past 16 bytes are searched otherwise: letters make them.
	alphabet := []byte(`[]{}"\\,aaaaaaaaaaaa`)
	rnd := rand.New(rand.NewPCG(3, 4))
	for n := range 50000 {
		b := make([]byte, rnd.IntN(96))
		for i := range b {
			b[i] = alphabet[rnd.IntN(len(alphabet))]
		}
		limit := 1 + n%4
		gd, ga := jsonvalue.Depth(b, limit)
		wd, wa := bytewise(b, limit)
		if gd != wd || ga != wa {
			t.Fatalf("Depth(%s, %d) = %d, %d; bytewise %d, %d", b, limit, gd, ga, wd, wa)
		}
	}
}

func BenchmarkDepth(b *testing.B) {
	docs := map[string][]byte{
		"short-strings": []byte(`{"model":"gpt-4o-mini","stream":false,"messages":[{"role":"user","content":"What's the weather in Paris?"},{"role":"assistant","tool_calls":[{"id":"call_paris","type":"function","function":{"name":"weather","arguments":"{\"location\":\"Paris\",\"unit\":\"celsius\"}"}}]},{"role":"tool","tool_call_id":"call_paris","content":"{\"location\":\"Paris\",\"temperature\":21,\"unit\":\"celsius\",\"condition\":\"sunny\"}"}],"tools":[{"type":"function","function":{"name":"weather","parameters":{"type":"object"}}}]}`),
		"long-string":   []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + strings.Repeat("The quick brown fox jumps over the lazy dog. ", 45) + `"}]}`),
	}
	for name, doc := range docs {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				jsonvalue.Depth(doc, 10000)
			}
		})
	}
}
