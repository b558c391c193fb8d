package proxy

import "testing"

// The journal keeps the last limit entries, oldest first, and counts the
// ones it dropped, however many times it wrapped.
func TestJournalKeepsTheLastEntriesInOrder(t *testing.T) {
	for _, n := range []int{0, 2, 3, 4, 7, 12} {
		j := journal{limit: 3}
		for k := 1; k <= n; k++ {
			j.add(LogEntry{Status: k})
		}
		got, dropped := j.snapshot()
		first := max(1, n-2)
		if len(got) != n-first+1 && !(n == 0 && len(got) == 0) {
			t.Fatalf("after %d adds: %d entries, want %d", n, len(got), min(n, 3))
		}
		for i, e := range got {
			if e.Status != first+i {
				t.Errorf("after %d adds: entry %d is %d, want %d", n, i, e.Status, first+i)
			}
		}
		if want := max(0, n-3); dropped != want {
			t.Errorf("after %d adds: dropped %d, want %d", n, dropped, want)
		}
	}
}
