package view

import (
	"fmt"
	"testing"
	"time"
)

// clock is a gate's time, moved by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func testGate() (*gate, *clock) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	g := newGate("tok")
	g.now = c.now
	return g, c
}

// TestGateWaits: the waits double from firstWait past freeAttempts up to
// maxWait; a right token after a wait starts the client afresh, and so
// does a pause of forgetAfter.
func TestGateWaits(t *testing.T) {
	g, c := testGate()
	for range freeAttempts {
		if a, _ := g.attempt("a", false); a != Refused {
			t.Fatalf("a free attempt: %v", a)
		}
	}
	want := firstWait
	for n := range 12 {
		if a, _ := g.attempt("a", false); a != Refused {
			t.Fatalf("wrong token %d: %v, want Refused", freeAttempts+n+1, a)
		}
		if a, wait := g.attempt("a", true); a != Throttled || wait != want {
			t.Fatalf("after wrong token %d: %v for %v, want Throttled for %v", freeAttempts+n+1, a, wait, want)
		}
		c.t = c.t.Add(want)
		want = min(2*want, maxWait)
	}
	if a, _ := g.attempt("a", true); a != Granted {
		t.Fatalf("the right token after the wait: %v", a)
	}
	if a, _ := g.attempt("a", false); a != Refused || g.clients["a"].n != 1 {
		t.Errorf("after a right token the count is %d, want 1", g.clients["a"].n)
	}
	for range freeAttempts - 1 {
		g.attempt("a", false)
	}
	c.t = c.t.Add(forgetAfter + time.Second)
	if g.attempt("a", false); g.clients["a"].until.After(c.t) {
		t.Error("a client that paused for forgetAfter still waits")
	}
}

// TestGateBounds: the clients kept and the sessions open stay within
// their bounds whatever comes, and the newest session always opens.
func TestGateBounds(t *testing.T) {
	g, c := testGate()
	for n := range 3 * maxClients {
		g.attempt(fmt.Sprintf("10.%d.%d.%d", n>>16&255, n>>8&255, n&255), false)
		c.t = c.t.Add(time.Millisecond)
	}
	if len(g.clients) > maxClients {
		t.Errorf("%d clients kept, want at most %d", len(g.clients), maxClients)
	}
	var last string
	for range 3 * maxSessions {
		last, _ = g.open()
		c.t = c.t.Add(time.Second)
	}
	if len(g.sessions) > maxSessions || !g.live(last) {
		t.Errorf("%d sessions kept (want at most %d), the newest live: %v", len(g.sessions), maxSessions, g.live(last))
	}
	c.t = c.t.Add(SessionLifetime)
	if g.live(last) {
		t.Error("a session outlived SessionLifetime")
	}
	id, _ := g.open()
	g.end(id)
	if g.live(id) {
		t.Error("an ended session is live")
	}
}
