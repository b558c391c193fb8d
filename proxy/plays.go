package proxy

import (
	"slices"
	"sync"
)

// use is the replay state of one interaction in this process.
type use uint8

const (
	unused use = iota
	inflight
	consumed
)

// plays is the replay state of a cassette's interactions in this process:
// which are being served and which were served whole. It is never stored.
type plays struct {
	mu      sync.Mutex
	state   map[uint64]use
	changed chan struct{} // closed and replaced by every release
}

func newPlays() *plays { return &plays{state: map[uint64]use{}, changed: make(chan struct{})} }

// A pick is the outcome of one try: an interaction acquired (id, repeat),
// the recordings exhausted, or a channel to wait on before trying again.
type pick struct {
	id        uint64
	repeat    bool
	exhausted bool
	wait      <-chan struct{}
}

// try picks the interaction to serve for ids (the recordings of one match
// key, in recorded order) and marks it in flight: the first recording not
// yet consumed. Recordings are served strictly in recorded order: when that
// first one is in flight for another request, try returns the channel to
// wait on, and the caller waits for that serve to end and tries again (with
// the recordings of the key as they are then). So a client that retries a
// request it abandoned mid-stream gets the same interaction back, even when
// its retry arrives before the proxy noticed it had gone. Once every
// recording is consumed, policy decides: reject reports exhausted;
// repeat-last returns the last recording with repeat set (a repeat serve
// changes no state); restart makes the recordings unused again and picks
// the first. try never waits, so it may run inside a read transaction.
func (p *plays) try(ids []uint64, policy Exhausted) pick {
	p.mu.Lock()
	defer p.mu.Unlock()
	first := slices.IndexFunc(ids, func(id uint64) bool { return p.state[id] != consumed })
	switch {
	case first >= 0 && p.state[ids[first]] == unused:
		p.state[ids[first]] = inflight
		return pick{id: ids[first]}
	case first >= 0: // in flight: wait for it to be released
		return pick{wait: p.changed}
	}
	switch policy {
	case ExhaustedRepeatLast:
		return pick{id: ids[len(ids)-1], repeat: true}
	case ExhaustedRestart:
		for _, id := range ids {
			p.state[id] = unused
		}
		p.state[ids[0]] = inflight
		return pick{id: ids[0]}
	}
	return pick{exhausted: true}
}

// release ends a serve: delivered consumes the interaction, otherwise it is
// left for a retry. Either way, requests waiting in acquire look again.
func (p *plays) release(id uint64, delivered bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if delivered {
		p.state[id] = consumed
	} else if p.state[id] == inflight {
		p.state[id] = unused
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

// markConsumed records that an interaction recorded in auto mode was served.
func (p *plays) markConsumed(id uint64) {
	p.mu.Lock()
	p.state[id] = consumed
	p.mu.Unlock()
}

// consumedCount is the number of interactions served whole.
func (p *plays) consumedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, u := range p.state {
		if u == consumed {
			n++
		}
	}
	return n
}

// isConsumed reports whether an interaction was served whole.
func (p *plays) isConsumed(id uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state[id] == consumed
}
