package parallel

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
)

func TestEachVisitsEveryIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 255, 256, 1000, 10_000} {
		seen := make([]atomic.Int32, n)
		if k, err := Each(n, func(k int) error { seen[k].Add(1); return nil }); k != -1 || err != nil {
			t.Fatalf("n=%d: Each = %d, %v", n, k, err)
		}
		for k := range seen {
			if c := seen[k].Load(); c != 1 {
				t.Fatalf("n=%d: index %d visited %d times", n, k, c)
			}
		}
	}
}

func TestEachReportsTheLowestFailure(t *testing.T) {
	bad := map[int]bool{700: true, 2001: true, 9000: true}
	k, err := Each(10_000, func(k int) error {
		if bad[k] {
			return fmt.Errorf("item %d: %w", k, errBad)
		}
		return nil
	})
	if k != 700 || !errors.Is(err, errBad) || err.Error() != "item 700: bad" {
		t.Errorf("Each = %d, %v; want 700 and item 700's error", k, err)
	}
}

var errBad = errors.New("bad")
