// Package heapfloor keeps the garbage collector's heap goal at least a
// floor above the live heap, so that a server whose live heap is small but
// which allocates fast collects about once a second rather than a dozen
// times or more.
//
// Go's collector starts a cycle when the heap has grown by GOGC percent of
// what the last one left live (100 %, at least 4 MB). A proxy serving tens
// of thousands of requests a second from a few megabytes of live heap
// allocates that every few hundred requests, and so collects a dozen times
// a second or more (13 in the bench's replay child at 64 connections):
// every cycle scans the goroutines' stacks and slows each allocation with
// write barriers and assists while it marks. With a floor, the goal is
// max(2 × live, live + floor): a small heap is left to grow by the floor
// between cycles (more memory, up to the floor, for far fewer cycles), and
// a heap larger than the floor is collected as Go's default would.
package heapfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// liveMetric is the heap the last cycle left live, marked.
const liveMetric = "/gc/heap/live:bytes"

// Serving is the floor llmproxy keeps: a live heap of a few megabytes
// then grows by about 16 MB between cycles, where Go's default collects a
// 2 MB one at 4 MB (bench/findings.md: a 32 MB floor gained no more).
const Serving = 16 << 20

// StartServing starts a Floor of Serving bytes, unless the environment
// sets GOGC (the user's choice stands); nil then.
func StartServing() *Floor {
	if _, set := os.LookupEnv("GOGC"); set {
		return nil
	}
	return Start(Serving)
}

// A Floor keeps the heap goal above a floor from Start until Stop.
type Floor struct {
	floor uint64

	mu      sync.Mutex
	stopped bool
	percent int // the GOGC set last
	prior   int // the GOGC before Start
	sample  []metrics.Sample
}

// Start keeps the heap goal at least floor bytes above the live heap,
// setting GOGC (debug.SetGCPercent) after each collection to what that
// takes, never under the GOGC in force before (normally 100); with the
// collector off (GOGC=off) it does nothing. The process has one collector:
// start one Floor at a time, from main, and only when the user set no GOGC
// of their own.
func Start(floor uint64) *Floor {
	f := &Floor{floor: floor, sample: []metrics.Sample{{Name: liveMetric}}}
	f.prior = debug.SetGCPercent(100)
	debug.SetGCPercent(f.prior)
	f.percent = f.prior
	if f.prior < 0 {
		f.stopped = true
		return f
	}
	f.adjust()
	f.arm()
	return f
}

// Stop gives GOGC back its value from before Start; the Floor changes it
// no more.
func (f *Floor) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.stopped || f.percent != f.prior {
		debug.SetGCPercent(f.prior)
		f.percent = f.prior
	}
	f.stopped = true
}

// Percent returns the GOGC the Floor set last.
func (f *Floor) Percent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.percent
}

// sentinel is an object the collector frees in each cycle; its finalizer
// runs after that cycle, adjusts GOGC and leaves a new sentinel for the
// next one.
type sentinel struct{ f *Floor }

// arm leaves a sentinel for the next cycle.
func (f *Floor) arm() {
	runtime.SetFinalizer(&sentinel{f}, func(s *sentinel) {
		if s.f.adjust() {
			s.f.arm()
		}
	})
}

// adjust sets GOGC for the live heap the last cycle left, and reports
// whether the Floor is still running.
func (f *Floor) adjust() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	metrics.Read(f.sample)
	live := uint64(0)
	if f.sample[0].Value.Kind() == metrics.KindUint64 {
		live = f.sample[0].Value.Uint64()
	}
	if p := Percent(live, f.floor, f.prior); p != f.percent {
		debug.SetGCPercent(p)
		f.percent = p
	}
	return true
}

// Percent is the GOGC that puts the heap goal at least floor bytes above
// live, and no lower than base. Go's goal is the larger of live × (1 +
// GOGC/100) and its minimum heap, 4 MB × GOGC/100; the smaller GOGC that
// takes either to live + floor is the one. It is rounded up to a multiple
// of 25, so that small changes of the live heap leave it alone, and
// capped at 100 000.
func Percent(live, floor uint64, base int) int {
	live = max(live, 1) // before the first cycle
	p := min(ceilDiv(floor*100, live), ceilDiv((live+floor)*100, minHeap))
	p = (p + 24) / 25 * 25
	return int(min(max(p, uint64(max(base, 0))), 100_000))
}

// minHeap is Go's minimum heap goal at GOGC=100 (runtime's
// defaultHeapMinimum).
const minHeap = 4 << 20

func ceilDiv(a, b uint64) uint64 { return (a + b - 1) / b }
