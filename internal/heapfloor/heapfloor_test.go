package heapfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		live, floor uint64
		base, want  int
	}{
		{live: 1 * mb, floor: 32 * mb, base: 100, want: 825},   // the minimum heap, 4 MB × 8.25, is 33 MB
		{live: 3 * mb, floor: 32 * mb, base: 100, want: 875},   // 35 MB: 4 MB × 8.75
		{live: 8 * mb, floor: 32 * mb, base: 100, want: 400},   // 40 MB: 8 MB × 5
		{live: 32 * mb, floor: 32 * mb, base: 100, want: 100},  // 64 MB: Go's own
		{live: 64 * mb, floor: 32 * mb, base: 100, want: 100},  // Go's own goal is higher
		{live: 64 * mb, floor: 32 * mb, base: 200, want: 200},  // never under the GOGC set before
		{live: 0, floor: 32 * mb, base: 100, want: 825},        // before the first cycle
		{live: 1, floor: 1 << 40, base: 100, want: 100_000},    // capped
		{live: 10 * mb, floor: 0, base: 100, want: 100},        // no floor
		{live: 8*mb + 1, floor: 32 * mb, base: 100, want: 400}, // a byte more changes nothing
	} {
		if got := Percent(tc.live, tc.floor, tc.base); got != tc.want {
			t.Errorf("Percent(%d, %d, %d) = %d, want %d", tc.live, tc.floor, tc.base, got, tc.want)
		}
	}
}

// goal reads the collector's heap goal and the live heap.
func goal() (goal, live uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

var sink []byte

// With a 32 MB floor the heap goal is at least 32 MB above the live heap,
// set at Start and again after each cycle (the finalizer runs after it),
// and Stop gives GOGC back: the goal falls back to Go's own.
func TestFloorRaisesTheGoal(t *testing.T) {
	prior := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prior)
	runtime.GC()
	if g, live := goal(); g >= live+32<<20 {
		t.Fatalf("goal %d KB over a live heap of %d KB before any floor", g>>10, live>>10)
	}
	f := Start(32 << 20)
	defer f.Stop()
	if g, live := goal(); g < live+32<<20 {
		t.Errorf("after Start the goal is %d KB, live %d KB: want at least 32 MB above it", g>>10, live>>10)
	}
	// A larger live heap, then a cycle: the finalizer sets GOGC for it.
	big := make([][]byte, 64)
	for i := range big {
		big[i] = make([]byte, 64<<10) // 4 MB live
	}
	at := f.Percent()
	runtime.GC()
	deadline := time.Now().Add(5 * time.Second)
	for f.Percent() == at && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	if g, live := goal(); f.Percent() == at || g < live+32<<20 {
		t.Errorf("after a cycle with %d KB live: GOGC %d (was %d), goal %d KB: want it set again, 32 MB above", live>>10, f.Percent(), at, g>>10)
	}
	runtime.KeepAlive(big)
	f.Stop()
	runtime.GC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after Stop GOGC is %d, want 100 back", got)
	}
	if g, live := goal(); g >= live+32<<20 {
		t.Errorf("after Stop the goal is %d KB over %d KB live: want Go's own", g>>10, live>>10)
	}
}

// Over the same garbage the collector runs less often with the floor (the
// counts are logged: under load Go's own pacing lets the heap overshoot,
// so only the direction is checked, over the sum of three tries).
func TestFloorFewerCycles(t *testing.T) {
	prior := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prior)
	var without, with uint64
	for range 3 {
		without += cycles(128)
		f := Start(32 << 20)
		with += cycles(128)
		f.Stop()
	}
	t.Logf("3 × 128 MB of garbage: %d cycles without a floor, %d with", without, with)
	if with >= without {
		t.Errorf("%d cycles with the floor, %d without: want fewer", with, without)
	}
}

// cycles is the collector's cycles while n MB of short-lived garbage is
// allocated in 1 KB pieces beside a small live heap.
func cycles(n int) uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	runtime.GC()
	metrics.Read(s)
	before := s[0].Value.Uint64()
	for range n << 10 {
		sink = make([]byte, 1024)
	}
	metrics.Read(s)
	return s[0].Value.Uint64() - before
}

// With the collector off, Start leaves it off.
func TestFloorLeavesGCOff(t *testing.T) {
	prior := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(prior)
	f := Start(32 << 20)
	runtime.GC()
	runtime.GC()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("GOGC %d; want the collector left off", got)
	}
	f.Stop()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("after Stop GOGC %d; want the collector left off", got)
	}
}

// A GOGC the user set stands: StartServing starts nothing.
func TestStartServingLeavesGOGC(t *testing.T) {
	t.Setenv("GOGC", "200")
	if f := StartServing(); f != nil {
		f.Stop()
		t.Fatal("StartServing started a Floor with GOGC set")
	}
}
