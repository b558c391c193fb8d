package wire

import (
	"strconv"
	"testing"
)

// A turn's path is the same whether it was made once (the first turns of
// each member) or for the request.
func TestTurnPath(t *testing.T) {
	for _, key := range []string{"messages", "contents", "input", "other"} {
		for _, i := range []int{0, 1, 9, 10, internedTurns - 1, internedTurns, 1000} {
			if got, want := turnPath(key, i), key+"."+strconv.Itoa(i); got != want {
				t.Errorf("turnPath(%q, %d) = %q, want %q", key, i, got, want)
			}
		}
	}
	if n := testing.AllocsPerRun(10, func() { _ = turnPath("messages", 3) }); n != 0 {
		t.Errorf("an interned path allocates %.0f times", n)
	}
}
