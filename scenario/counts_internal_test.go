package scenario

import (
	"slices"
	"testing"
)

// TestStepCounts checks that the counts read at any time, mid-batch or
// after several batches, are those of every step added so far.
func TestStepCounts(t *testing.T) {
	const steps = 7
	c := newStepCounts(steps)
	want := make([]int, steps)
	for k := range 3*countBatch + 5 {
		step := k * k % steps
		c.add(step)
		want[step]++
		if k%(countBatch/2+3) == 0 || k == countBatch-1 || k == countBatch {
			c.mu.Lock()
			got := slices.Clone(c.all())
			c.mu.Unlock()
			if !slices.Equal(got, want) {
				t.Fatalf("after %d adds: counts %v, want %v", k+1, got, want)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if got := c.all(); !slices.Equal(got, want) || len(c.log) != 0 {
		t.Errorf("counts %v (%d logged), want %v", got, len(c.log), want)
	}
}
