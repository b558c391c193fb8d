package proxy

import (
	"errors"
	"slices"
	"sync"

	"github.com/llmproxy/llmproxy/cassette"
)

// writeBehind stores the interactions recorded on one cassette behind their
// responses, in the order their requests arrived. Each request being
// recorded holds a slot in that order; one writer goroutine, started by the
// first, stores the ready slots at the head of the order, as many per
// transaction as are ready.
type writeBehind struct {
	// store writes a batch in one transaction (index.append).
	store func([]cassette.Keyed) ([]cassette.Appended, error)

	// maxQueued bounds the bytes of ready interactions waiting behind an
	// open one; zero means defaultMaxQueued. Past it the writer writes
	// ahead (see takeReady).
	maxQueued int64

	mu     sync.Mutex
	order  []*slot
	queued int64 // the bytes of the ready interactions in order
	// wake wakes the writer; done is closed when it ends, after closing is
	// set and the last ready slot is stored.
	wake    chan struct{}
	done    chan struct{}
	closing bool
}

// A slot is one recording's place in the arrival order.
type slot struct {
	w     *writeBehind
	ready bool
	// What to write once every earlier slot is ready: i is nil when the
	// recording produced nothing (the upstream or the client failed).
	i          *cassette.Interaction
	key, shape string
	size       int64 // i's bytes, counted in writeBehind.queued
	// written reports the outcome of the write, from the writer; settled is
	// called after it, or at once for an empty slot.
	written func(id uint64, err error)
	settled func()
	// dropped marks a slot the closing writer will not write.
	dropped bool
}

// errTapeClosed is why an interaction whose response ended after the proxy
// closed its cassette was not written.
var errTapeClosed = errors.New("the proxy closed the cassette before the response ended")

const (
	// maxBatch bounds the interactions written in one transaction.
	maxBatch = 256
	// defaultMaxQueued is writeBehind.maxQueued's default.
	defaultMaxQueued = 64 << 20
)

// arrive gives a request about to be recorded its place in the cassette.
// Interactions are written in the order their requests arrived, whatever
// order their responses complete in: an agent that reads a stream to its
// end and at once sends the next turn must find the first turn recorded
// first, and identical requests replay in the order they were sent. The
// caller must end the slot with commit; abandon (safe to defer) commits an
// empty slot if it was not. settled, if not nil, is called once the slot's
// interaction is written or the slot is passed empty.
func (w *writeBehind) arrive(settled func()) *slot { return w.arriveFor("", settled) }

// arriveFor is arrive for a request of a known match key: past maxQueued,
// a ready interaction is written ahead of open ones, but never ahead of an
// open one of the same key (identical requests replay in the order sent).
func (w *writeBehind) arriveFor(key string, settled func()) *slot {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := &slot{w: w, settled: settled, key: key}
	if w.closing {
		s.dropped = true
		return s
	}
	if w.wake == nil {
		w.wake, w.done = make(chan struct{}, 1), make(chan struct{})
		go w.run()
	}
	w.order = append(w.order, s)
	return s
}

// commit ends the slot with the interaction to write (nil for none) and
// returns at once: the writer stores it after every interaction whose
// request arrived earlier, so a short response never waits on a long one,
// and a response reaches its client without waiting for the disk. written
// is called with the outcome of the write.
func (s *slot) commit(i *cassette.Interaction, key, shape string, written func(uint64, error)) {
	w := s.w
	w.mu.Lock()
	if s.ready {
		w.mu.Unlock()
		return
	}
	s.ready, s.i, s.key, s.shape, s.written = true, i, key, shape, written
	if i != nil && !s.dropped {
		s.size = interactionSize(i)
		w.queued += s.size
	}
	dropped := s.dropped
	w.mu.Unlock()
	switch {
	case dropped:
		if i != nil && written != nil {
			written(0, errTapeClosed)
		}
		if s.settled != nil {
			s.settled()
		}
	case i == nil:
		// Nothing to write: only the slots after it were waiting.
		if s.settled != nil {
			s.settled()
		}
		w.signal()
	default:
		w.signal()
	}
}

// behind reports whether the slot is ready but waits for an earlier slot
// of its cassette that is not.
func (s *slot) behind() bool {
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if !s.ready {
		return false
	}
	for _, o := range w.order {
		if o == s {
			return false
		}
		if !o.ready {
			return true
		}
	}
	return false
}

// commitNow is commit for an interaction whose client is waiting for it to
// be stored (Config.Sync): it is written as soon as its response completed,
// before the slots of earlier requests still under way, so that a short
// response does not wait for a long one. The order of causally related
// requests holds all the same: a client that waits for a response's end
// sends its next request only after the write.
func (s *slot) commitNow(i *cassette.Interaction, key, shape string, written func(uint64, error)) {
	w := s.w
	w.mu.Lock()
	if k := slices.Index(w.order, s); k > 0 {
		w.order = slices.Insert(slices.Delete(w.order, k, k+1), 0, s)
	}
	w.mu.Unlock()
	s.commit(i, key, shape, written)
}

// abandon commits an empty slot unless it was committed.
func (s *slot) abandon() { s.commit(nil, "", "", nil) }

func (w *writeBehind) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run stores ready slots in arrival order until the writer closes.
func (w *writeBehind) run() {
	defer close(w.done)
	for {
		batch, stop := w.takeReady()
		if len(batch) > 0 {
			w.write(batch)
			continue
		}
		if stop {
			return
		}
		<-w.wake
	}
}

// takeReady removes the ready slots at the head of the order. Once the
// writer is closing it takes every ready slot, drops the rest (their
// handlers are still running past the shutdown), and reports stop when none
// is left.
func (w *writeBehind) takeReady() (batch []*slot, stop bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing {
		w.order = slices.DeleteFunc(w.order, func(s *slot) bool {
			s.dropped = !s.ready
			return s.dropped
		})
	}
	n := 0
	for n < len(w.order) && n < maxBatch && w.order[n].ready {
		n++
	}
	batch = slices.Clone(w.order[:n])
	w.order = slices.Delete(w.order, 0, n)
	if n == 0 && w.queued > w.limit() {
		batch = w.takeAhead()
	}
	for _, s := range batch {
		w.queued -= s.size
	}
	return batch, w.closing && len(batch) == 0
}

// takeAhead removes from the order the ready slots behind open ones (a
// quarter of maxQueued of them at most, a transaction's worth), but for
// those behind an open slot of the same key: the writer writes them ahead, so that a long response under way does not hold an unbounded
// queue of finished ones in memory. They take ids before the open ones.
func (w *writeBehind) takeAhead() []*slot {
	var batch []*slot
	var bytes int64
	open := map[string]bool{}
	w.order = slices.DeleteFunc(w.order, func(s *slot) bool {
		switch {
		case !s.ready:
			open[s.key] = true
			return false
		case open[s.key] || len(batch) == maxBatch || bytes > w.limit()/4:
			return false
		}
		batch = append(batch, s)
		bytes += s.size
		return true
	})
	return batch
}

func (w *writeBehind) limit() int64 {
	if w.maxQueued > 0 {
		return w.maxQueued
	}
	return defaultMaxQueued
}

// interactionSize is about the bytes an interaction holds.
func interactionSize(i *cassette.Interaction) int64 {
	n := len(i.Request.Body) + len(i.Response.Body)
	for _, e := range i.Response.Events {
		n += len(e.Data)
	}
	return int64(n)
}

// close makes the writer store every ready interaction and end, and waits
// for it. Interactions whose responses end later are not written.
func (w *writeBehind) close() {
	w.mu.Lock()
	w.closing = true
	done := w.done
	w.mu.Unlock()
	if done != nil {
		w.signal()
		<-done
	}
}

// write stores the interactions of ready slots in one transaction.
func (w *writeBehind) write(batch []*slot) {
	items := make([]cassette.Keyed, 0, len(batch))
	owners := make([]*slot, 0, len(batch))
	for _, s := range batch {
		if s.i != nil {
			items = append(items, cassette.Keyed{Interaction: s.i, Key: s.key, Shape: s.shape})
			owners = append(owners, s)
		}
	}
	if len(items) == 0 {
		return
	}
	res, err := w.store(items)
	for k, s := range owners {
		id, werr := uint64(0), err
		if err == nil {
			id, werr = res[k].ID, res[k].Err
		}
		if s.written != nil {
			s.written(id, werr)
		}
		if s.settled != nil {
			s.settled()
		}
	}
}
