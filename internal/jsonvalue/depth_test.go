package jsonvalue_test

import (
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
