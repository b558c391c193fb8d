package proxy

import (
	"net/http"
	"sync"
	"testing"
	"time"
)

// deadlineWriter is a ResponseWriter that notes the read deadlines set
// on it.
type deadlineWriter struct {
	http.ResponseWriter
	mu  sync.Mutex
	set []time.Time
}

func (d *deadlineWriter) SetReadDeadline(t time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.set = append(d.set, t)
	return nil
}

func (d *deadlineWriter) deadlines() []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Time(nil), d.set...)
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("after 10 s: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBodyWatchCutsSlowBodies: a body read for longer than the timeout has
// its connection's read deadline set in the past, never before the
// timeout; one whose read ended in time is never touched; the timer stops
// once nothing is watched, and starts again with the next body.
func TestBodyWatchCutsSlowBodies(t *testing.T) {
	const timeout = 80 * time.Millisecond
	bw := newBodyWatch(timeout)
	defer bw.stop()

	var slow, quick watched
	slowW, quickW := &deadlineWriter{}, &deadlineWriter{}
	start := time.Now()
	bw.add(&slow, slowW)
	bw.add(&quick, quickW)
	if bw.remove(&quick) {
		t.Fatal("a body read at once was cut")
	}
	waitFor(t, "the slow body was not cut", func() bool { return len(slowW.deadlines()) > 0 })
	if took := time.Since(start); took < timeout {
		t.Fatalf("cut after %s, before the timeout of %s", took, timeout)
	}
	if d := slowW.deadlines(); len(d) != 1 || !d[0].Before(start) {
		t.Fatalf("deadlines set %v, want one in the past", d)
	}
	if !bw.remove(&slow) {
		t.Fatal("remove did not report the cut")
	}
	time.Sleep(2 * timeout)
	if d := quickW.deadlines(); len(d) != 0 {
		t.Fatalf("a body removed in time got deadlines %v", d)
	}

	waitFor(t, "the timer still runs with nothing to watch", func() bool {
		bw.mu.Lock()
		defer bw.mu.Unlock()
		return !bw.running
	})
	var again watched
	againW := &deadlineWriter{}
	bw.add(&again, againW)
	waitFor(t, "a body watched after the timer stopped was not cut", func() bool { return len(againW.deadlines()) > 0 })
	bw.remove(&again)
}

// TestBodyWatchStopped: once stopped, the watch cuts nothing and its timer
// does not start again.
func TestBodyWatchStopped(t *testing.T) {
	bw := newBodyWatch(10 * time.Millisecond)
	bw.stop()
	var n watched
	w := &deadlineWriter{}
	bw.add(&n, w)
	time.Sleep(50 * time.Millisecond)
	if bw.remove(&n) || len(w.deadlines()) != 0 {
		t.Fatalf("a stopped watch cut a body: %v", w.deadlines())
	}
	bw.mu.Lock()
	defer bw.mu.Unlock()
	if bw.running {
		t.Fatal("a stopped watch's timer runs")
	}
}

// TestBodyWatchConcurrent: bodies added and removed from many goroutines
// while the timer ticks leave the list empty and consistent (under -race).
func TestBodyWatchConcurrent(t *testing.T) {
	bw := newBodyWatch(8 * time.Millisecond)
	defer bw.stop()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			var n watched
			w := &deadlineWriter{}
			for k := range 500 {
				bw.add(&n, w)
				if k%50 == 0 {
					time.Sleep(time.Millisecond)
				}
				bw.remove(&n)
			}
		})
	}
	wg.Wait()
	bw.mu.Lock()
	defer bw.mu.Unlock()
	if bw.bodies.next != &bw.bodies || bw.bodies.prev != &bw.bodies {
		t.Fatal("bodies left in the list")
	}
}
