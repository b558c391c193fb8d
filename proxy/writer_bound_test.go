package proxy

import (
	"bytes"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
)

// Finished interactions queued behind an open one are written ahead of it
// once they hold more than maxQueued bytes, except one whose request is
// identical to (has the match key of) an open one, which keeps its place.
func TestWriteBehindWritesAheadPastItsBound(t *testing.T) {
	// No writer goroutine: takeReady is called here, as the writer would.
	w := &writeBehind{maxQueued: 1000, wake: make(chan struct{}, 1), done: make(chan struct{})}
	big := func() *cassette.Interaction {
		return &cassette.Interaction{Request: cassette.Request{Method: "POST"}, Response: cassette.Response{Status: 200, Body: bytes.Repeat([]byte("x"), 400)}}
	}
	open := w.arriveFor("long", nil)
	same := w.arriveFor("long", nil)
	a, b := w.arriveFor("a", nil), w.arriveFor("b", nil)
	same.commit(big(), "long", "", nil)
	a.commit(big(), "a", "", nil)
	if batch, _ := w.takeReady(); len(batch) != 0 {
		t.Fatalf("800 bytes behind the open slot, under the bound of 1 000: %d written ahead, want 0 yet", len(batch))
	}
	b.commit(big(), "b", "", nil)
	// 1 200 bytes queued: written ahead until under the bound again, a
	// quarter of the bound per transaction, never the slot of the open
	// slot's key.
	var batch []*slot
	for {
		more, _ := w.takeReady()
		if len(more) == 0 {
			break
		}
		batch = append(batch, more...)
	}
	if len(batch) != 1 || batch[0] != a {
		t.Fatalf("past the bound: %d slots written ahead, want a alone (then under the bound)", len(batch))
	}
	if w.queued != 800 {
		t.Errorf("queued %d bytes after writing ahead, want the 800 still behind", w.queued)
	}
	open.commit(big(), "long", "", nil)
	if batch, _ := w.takeReady(); len(batch) != 3 || batch[0] != open || batch[1] != same || batch[2] != b {
		t.Errorf("once the open slot is ready: %d written, want it, the identical request behind it, then b", len(batch))
	}
}
