package proxy

import (
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// watch bounds, with one timer, the time each of many things may take:
// the HTTP/1 request bodies a server reads (Config.ReadTimeout), or the
// keep-alive connections an http.Server holds idle (HTTPServer). A read
// deadline set for each — what net/http's IdleTimeout and a handler's own
// body deadline do — costs every request two timer operations, and each
// wakes an idle thread of the Go scheduler: on one connection about a
// tenth of a replayed request's time (bench/findings.md).
//
// A thing is watched from add to remove. The timer runs while something
// is watched, and for one timeout after; it ticks every eighth of the
// timeout and cuts each thing watched for longer than the timeout: a
// body's connection gets a read deadline in the past, which ends the read
// with the timeout error a deadline of its own would have given; an idle
// connection is closed. A thing is cut after between 1 and 1 1/8 of the
// timeout. A thing marked busy (a connection serving a request, see
// watched.since) stays listed but is not timed until it is marked again.
type watch struct {
	tick  time.Duration
	limit uint64 // the ticks a thing may take

	ticks atomic.Uint64 // since the watch began; changed only under mu

	mu      sync.Mutex
	list    watched // the things watched (the list's sentinel)
	timer   *time.Timer
	running bool
	quiet   uint64 // ticks in a row with nothing watched
	stopped bool
}

// watched is one thing watched, an entry of a watch's list: the body of
// the request w answers, or the connection conn.
type watched struct {
	prev, next *watched
	// since is the tick the watch began at, or busy while the thing is
	// listed but not timed (a connection serving a request): a connection
	// changes it without the watch's lock (see idleConns).
	since atomic.Uint64
	w     http.ResponseWriter
	conn  net.Conn
	cut   bool
}

// busy is a watched thing's since while it is not timed.
const busy = ^uint64(0)

// watchTicks is how many ticks a timeout lasts.
const watchTicks = 8

// newWatch is a watch cutting what takes longer than timeout.
func newWatch(timeout time.Duration) *watch {
	wt := &watch{tick: max(timeout/watchTicks, time.Millisecond)}
	wt.limit = uint64((timeout + wt.tick - 1) / wt.tick)
	wt.list.prev, wt.list.next = &wt.list, &wt.list
	return wt
}

// add watches the body of the request w answers, or when w is nil the
// connection conn, through n, until remove. n must not be watched already.
func (wt *watch) add(n *watched, w http.ResponseWriter, conn net.Conn) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	wt.addLocked(n, w, conn)
}

// addLocked is add with wt.mu held.
func (wt *watch) addLocked(n *watched, w http.ResponseWriter, conn net.Conn) {
	n.w, n.conn, n.cut = w, conn, false
	n.since.Store(wt.ticks.Load())
	n.prev, n.next = &wt.list, wt.list.next
	n.next.prev, wt.list.next = n, n
	if wt.running || wt.stopped {
		return
	}
	wt.running, wt.quiet = true, 0
	if wt.timer == nil {
		wt.timer = time.AfterFunc(wt.tick, wt.fire)
	} else {
		wt.timer.Reset(wt.tick)
	}
}

// remove ends the watch of n, if it is watched, and reports whether it was
// cut.
func (wt *watch) remove(n *watched) (cut bool) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return wt.removeLocked(n)
}

// removeLocked is remove with wt.mu held.
func (wt *watch) removeLocked(n *watched) (cut bool) {
	if n.prev != nil {
		n.prev.next, n.next.prev = n.next, n.prev
		n.prev, n.next, n.w, n.conn = nil, nil, nil, nil
	}
	return n.cut
}

// fire is the tick: it cuts what is over the limit, and lets the timer
// stop after a timeout with nothing to watch.
func (wt *watch) fire() {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if wt.stopped {
		wt.running = false
		return
	}
	ticks := wt.ticks.Add(1)
	for n := wt.list.next; n != &wt.list; n = n.next {
		if since := n.since.Load(); !n.cut && since != busy && ticks-since > wt.limit {
			n.cut = true
			n.cutNow()
		}
	}
	if wt.list.next == &wt.list {
		if wt.quiet++; wt.quiet >= wt.limit {
			wt.running = false
			return
		}
	} else {
		wt.quiet = 0
	}
	wt.timer.Reset(wt.tick)
}

// cutNow ends the body's read, or closes the connection.
func (n *watched) cutNow() {
	if n.w != nil {
		// A writer without deadlines (a test's recorder) reads on.
		_ = http.NewResponseController(n.w).SetReadDeadline(time.Unix(1, 0))
		return
	}
	_ = n.conn.Close()
}

// stop ends the watch's timer for good: nothing watched afterwards is cut.
func (wt *watch) stop() {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	wt.stopped = true
	if wt.timer != nil {
		wt.timer.Stop()
	}
}

// idleConns closes the connections of an http.Server that stay idle —
// new, or between requests — for longer than its watch's timeout. A
// connection is listed in the watch from StateNew until it closes or is
// hijacked; going active or idle only stores when it went idle (busy
// while active), with no lock: those are two changes every request makes.
type idleConns struct {
	watch *watch
	conns sync.Map // net.Conn → *watched: the listed connections
}

func (ic *idleConns) state(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		n := new(watched)
		ic.conns.Store(c, n)
		ic.watch.add(n, nil, c)
	case http.StateActive, http.StateIdle:
		v, ok := ic.conns.Load(c)
		if !ok {
			return
		}
		since := busy
		if st == http.StateIdle {
			since = ic.watch.ticks.Load()
		}
		v.(*watched).since.Store(since)
	case http.StateHijacked, http.StateClosed:
		if v, ok := ic.conns.LoadAndDelete(c); ok {
			ic.watch.remove(v.(*watched))
		}
	}
}

// HTTPServer is the http.Server the commands serve h with. It bounds a
// request's headers to 30 s, and closes a connection idle for longer than
// idle, new or between requests, through one timer for all connections
// (see watch) rather than a deadline set after every request as
// http.Server.IdleTimeout would. It has no WriteTimeout: a long stream is
// never cut for taking long; the proxy bounds the request body
// (Config.ReadTimeout). errorLog receives net/http's own errors.
func HTTPServer(h http.Handler, idle time.Duration, errorLog *log.Logger) *http.Server {
	ic := &idleConns{watch: newWatch(idle)}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, ConnState: ic.state, ErrorLog: errorLog}
	hs.RegisterOnShutdown(ic.watch.stop)
	return hs
}
