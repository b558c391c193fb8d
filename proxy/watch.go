package proxy

import (
	"net/http"
	"sync"
	"time"
)

// bodyWatch bounds the time HTTP/1 requests take to send their bodies
// (Config.ReadTimeout) with one timer for the whole server. A read
// deadline of each request's own costs the request two timer operations,
// and each wakes an idle thread of the Go scheduler: on one connection
// about a tenth of a replayed request's time (bench/findings.md).
//
// A body is watched while it is read. The timer runs while bodies are
// read, and for one timeout after the last; it ticks every eighth of the
// timeout and, for each body watched for longer than the timeout, sets its
// connection's read deadline in the past. That ends the read with the
// timeout error a deadline of its own would have given, after between 1
// and 1 1/8 of the timeout.
type bodyWatch struct {
	tick  time.Duration
	limit uint64 // the ticks a body may take

	mu      sync.Mutex
	ticks   uint64  // since the watch began
	bodies  watched // the list of bodies being read (its sentinel)
	timer   *time.Timer
	running bool
	quiet   uint64 // ticks in a row with no body watched
	stopped bool
}

// watched is one body being read, an entry of bodyWatch's list.
type watched struct {
	prev, next *watched
	since      uint64
	w          http.ResponseWriter
	cut        bool
}

// watchTicks is how many ticks a timeout lasts.
const watchTicks = 8

// newBodyWatch is a watch cutting bodies read for longer than timeout.
func newBodyWatch(timeout time.Duration) *bodyWatch {
	bw := &bodyWatch{tick: max(timeout/watchTicks, time.Millisecond)}
	bw.limit = uint64((timeout + bw.tick - 1) / bw.tick)
	bw.bodies.prev, bw.bodies.next = &bw.bodies, &bw.bodies
	return bw
}

// add watches the body of the request w answers, through n, until remove.
func (bw *bodyWatch) add(n *watched, w http.ResponseWriter) {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	n.w, n.since, n.cut = w, bw.ticks, false
	n.prev, n.next = &bw.bodies, bw.bodies.next
	n.next.prev, bw.bodies.next = n, n
	if bw.running || bw.stopped {
		return
	}
	bw.running, bw.quiet = true, 0
	if bw.timer == nil {
		bw.timer = time.AfterFunc(bw.tick, bw.fire)
	} else {
		bw.timer.Reset(bw.tick)
	}
}

// remove ends the watch of n, and reports whether its read was cut (its
// connection's read deadline is then in the past).
func (bw *bodyWatch) remove(n *watched) (cut bool) {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	n.prev.next, n.next.prev = n.next, n.prev
	n.prev, n.next, n.w = nil, nil, nil
	return n.cut
}

// fire is the tick: it cuts the reads over the limit, and lets the timer
// stop after a timeout with nothing to watch.
func (bw *bodyWatch) fire() {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	if bw.stopped {
		bw.running = false
		return
	}
	bw.ticks++
	for n := bw.bodies.next; n != &bw.bodies; n = n.next {
		if !n.cut && bw.ticks-n.since > bw.limit {
			n.cut = true
			// A writer without deadlines (a test's recorder) reads on.
			_ = http.NewResponseController(n.w).SetReadDeadline(time.Unix(1, 0))
		}
	}
	if bw.bodies.next == &bw.bodies {
		if bw.quiet++; bw.quiet >= bw.limit {
			bw.running = false
			return
		}
	} else {
		bw.quiet = 0
	}
	bw.timer.Reset(bw.tick)
}

// stop ends the watch's timer for good; bodies read afterwards are not
// cut.
func (bw *bodyWatch) stop() {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	bw.stopped = true
	if bw.timer != nil {
		bw.timer.Stop()
	}
}
