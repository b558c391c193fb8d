package view

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
)

// streamDepth is how many batches of new entries a live stream may have
// waiting; a stream further behind is dropped (see hub.publish).
const streamDepth = 16

// A delta is one new log entry as every live stream sends it: rendered
// once, with what a stream filtered to a cassette looks at.
type delta struct {
	seq            uint64
	name, cassette string
	event          []byte // the server-sent event, shared: never written to
}

// wanted reports whether a stream filtered to cassette name sends d.
func (d *delta) wanted(name string) bool {
	return name == "" || d.name == name || d.cassette == name
}

// A subscriber is one live stream's place in the hub.
type subscriber struct {
	// ch carries batches of deltas, oldest first; the hub closes it when it
	// drops the stream.
	ch chan []delta
}

// hub reads the log once per change, renders each new entry once, and
// hands the same rendered deltas to every live stream, so that a stream
// costs the requests that change the log nothing but a channel send. A
// stream that falls streamDepth batches behind is dropped, never waited for:
// its browser reconnects and continues after the last entry it got
// (Last-Event-ID). The hub's goroutine runs while a stream is open.
type hub struct {
	src    Source
	render func(*bytes.Buffer, LogEntry) error
	closed <-chan struct{}
	log    *slog.Logger

	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	last    uint64 // the Seq of the newest entry handed out
	running bool
	wake    chan struct{} // told when the last stream leaves
}

// subscribe adds a stream. Every entry after from reaches it through its
// channel; the entries up to from are for it to read itself.
func (b *hub) subscribe() (sub *subscriber, from uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs == nil {
		b.subs, b.wake = map[*subscriber]struct{}{}, make(chan struct{}, 1)
	}
	sub = &subscriber{ch: make(chan []delta, streamDepth)}
	b.subs[sub] = struct{}{}
	if !b.running {
		b.running = true
		go b.run()
	}
	return sub, b.last
}

// unsubscribe removes a stream that ends.
func (b *hub) unsubscribe(sub *subscriber) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.subs, sub)
	if len(b.subs) == 0 {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
}

// run reads and hands out the log's new entries at every change, until no
// stream is open or the view is closed.
func (b *hub) run() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-b.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		b.mu.Lock()
		if len(b.subs) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		after := b.last
		b.mu.Unlock()
		changed := b.src.LogChanged()
		entries, err := b.src.Log(ctx, after, logLimit)
		if err != nil {
			b.stop()
			return
		}
		b.publish(b.deltas(entries))
		select {
		case <-changed:
		case <-b.wake:
		case <-b.closed:
			b.stop()
			return
		}
	}
}

// deltas renders entries, each once.
func (b *hub) deltas(entries []LogEntry) []delta {
	out := make([]delta, 0, len(entries))
	for _, e := range entries {
		var buf bytes.Buffer
		if err := b.render(&buf, e); err != nil {
			b.log.Error("view: rendering a log entry", "seq", e.Seq, "err", err)
			buf.Reset()
		}
		out = append(out, delta{seq: e.Seq, name: e.Name, cassette: e.Cassette, event: buf.Bytes()})
	}
	return out
}

// publish hands batch to every stream, dropping a stream whose channel is
// full rather than waiting for it.
func (b *hub) publish(batch []delta) {
	if len(batch) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last = max(b.last, batch[len(batch)-1].seq)
	for sub := range b.subs {
		select {
		case sub.ch <- batch:
		default:
			delete(b.subs, sub)
			close(sub.ch)
		}
	}
}

// stop drops every stream and ends the goroutine's turn.
func (b *hub) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for sub := range b.subs {
		delete(b.subs, sub)
		close(sub.ch)
	}
	b.running = false
}
