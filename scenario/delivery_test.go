package scenario_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/scenario"
)

func TestStreamPieces(t *testing.T) {
	tests := []struct {
		chunk int
		text  string
		want  []string
	}{
		{0, "Paris is sunny, 21 °C.", []string{"Paris ", "is ", "sunny, ", "21 ", "°C."}},
		{0, "  lead\n\nand  trail  ", []string{"  lead\n\n", "and  ", "trail  "}},
		{0, "one", []string{"one"}},
		{0, "", nil},
		{4, "Paris °C", []string{"Pari", "s °C"}},
		{3, "°°°°", []string{"°°°", "°"}},
		{100, "short", []string{"short"}},
	}
	for _, tt := range tests {
		got := scenario.Stream{Chunk: tt.chunk}.Pieces(tt.text)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("chunk %d %q: %q, want %q", tt.chunk, tt.text, got, tt.want)
		}
		if strings.Join(got, "") != tt.text {
			t.Errorf("chunk %d %q: pieces do not join to the text", tt.chunk, tt.text)
		}
	}
}
