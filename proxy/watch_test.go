package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
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

// TestWatchCutsSlowBodies: a body read for longer than the timeout has
// its connection's read deadline set in the past, never before the
// timeout; one whose read ended in time is never touched; the timer stops
// once nothing is watched, and starts again with the next body.
func TestWatchCutsSlowBodies(t *testing.T) {
	const timeout = 80 * time.Millisecond
	bw := newWatch(timeout)
	defer bw.stop()

	var slow, quick watched
	slowW, quickW := &deadlineWriter{}, &deadlineWriter{}
	start := time.Now()
	bw.add(&slow, slowW, nil)
	bw.add(&quick, quickW, nil)
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
	bw.add(&again, againW, nil)
	waitFor(t, "a body watched after the timer stopped was not cut", func() bool { return len(againW.deadlines()) > 0 })
	bw.remove(&again)
}

// TestWatchStopped: once stopped, the watch cuts nothing and its timer
// does not start again.
func TestWatchStopped(t *testing.T) {
	bw := newWatch(10 * time.Millisecond)
	bw.stop()
	var n watched
	w := &deadlineWriter{}
	bw.add(&n, w, nil)
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

// TestWatchConcurrent: bodies added and removed from many goroutines
// while the timer ticks leave the list empty and consistent (under -race).
func TestWatchConcurrent(t *testing.T) {
	bw := newWatch(8 * time.Millisecond)
	defer bw.stop()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			var n watched
			w := &deadlineWriter{}
			for k := range 500 {
				bw.add(&n, w, nil)
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
	if bw.list.next != &bw.list || bw.list.prev != &bw.list {
		t.Fatal("bodies left in the list")
	}
}

// serveIdle serves h with HTTPServer and an idle timeout, and returns its
// address.
func serveIdle(t *testing.T, idle time.Duration, h http.HandlerFunc) string {
	t.Helper()
	hs := HTTPServer(h, idle, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// ask sends a GET on conn and reads its answer.
func ask(conn net.Conn, br *bufio.Reader) (string, error) {
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// closedWithin reports whether the server closes conn within d.
func closedWithin(conn net.Conn, br *bufio.Reader, d time.Duration) bool {
	conn.SetReadDeadline(time.Now().Add(d))
	_, err := br.ReadByte()
	return errors.Is(err, io.EOF)
}

// TestHTTPServerClosesIdleConnections: HTTPServer's connections are closed
// once idle for longer than the idle timeout — between requests, or new
// and silent — never before it, and never while a request is under way or
// while requests keep coming more often than the timeout.
func TestHTTPServerClosesIdleConnections(t *testing.T) {
	const idle = 150 * time.Millisecond
	addr := serveIdle(t, idle, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("slow") {
			time.Sleep(3 * idle)
		}
		io.WriteString(w, "ok")
	})
	dial := func() (net.Conn, *bufio.Reader) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn, bufio.NewReader(conn)
	}

	t.Run("idle after a request", func(t *testing.T) {
		conn, br := dial()
		if got, err := ask(conn, br); err != nil || got != "ok" {
			t.Fatalf("%q, %v", got, err)
		}
		start := time.Now()
		if !closedWithin(conn, br, 10*time.Second) {
			t.Fatal("an idle connection was not closed within 10 s")
		}
		if took := time.Since(start); took < idle {
			t.Fatalf("closed after %s idle, before the timeout of %s", took, idle)
		}
	})
	t.Run("new and silent", func(t *testing.T) {
		conn, br := dial()
		if !closedWithin(conn, br, 10*time.Second) {
			t.Fatal("a silent new connection was not closed within 10 s")
		}
	})
	t.Run("busy", func(t *testing.T) {
		conn, br := dial()
		for k := range 8 {
			if got, err := ask(conn, br); err != nil || got != "ok" {
				t.Fatalf("request %d on a connection in use: %q, %v", k, got, err)
			}
			time.Sleep(idle / 3)
		}
	})
	t.Run("slow answer", func(t *testing.T) {
		conn, br := dial()
		if _, err := io.WriteString(conn, "GET /?slow HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("a request under way for longer than the idle timeout lost its connection: %v", err)
		}
		resp.Body.Close()
	})
}
