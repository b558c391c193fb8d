package proxy

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// errBodyBudget is why a request body was refused: the bodies of the
// requests in flight already hold Config.MaxBodyTotal bytes.
var errBodyBudget = errors.New("request bodies in flight are over their total limit")

// bodyBudget bounds the bytes of request bodies held at once.
type bodyBudget struct {
	limit int64
	used  atomic.Int64
}

// take reserves n bytes, or reports false when that would pass the limit.
func (b *bodyBudget) take(n int64) bool {
	for {
		used := b.used.Load()
		if used+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// give returns n bytes taken earlier.
func (b *bodyBudget) give(n int64) { b.used.Add(-n) }

// budgetReader reads a body, reserving each read's bytes from a budget;
// held is what it reserved, to be given back once the body is dropped.
// Closing it closes the body.
type budgetReader struct {
	r    io.ReadCloser
	b    *bodyBudget
	held int64
	// spare is the buffer of an earlier body that nothing kept, for this
	// body's bytes (see bodyReaders).
	spare []byte
}

func (r *budgetReader) Close() error { return r.r.Close() }

func (r *budgetReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		if !r.b.take(int64(n)) {
			return 0, errBodyBudget
		}
		r.held += int64(n)
	}
	return n, err
}

// release gives back what the reader reserved.
func (r *budgetReader) release() { r.b.give(r.held); r.held = 0 }

// A scratch is the memory of a proxied request that a recording answered:
// its exchange, its body's reader and buffer, and the map of its redacted
// headers. Nothing holds any of it once the answer is written, so it serves
// the next request, which then allocates none of it. (A recording or a miss
// may keep parts of its request: their scratch is let go. A mock answer
// uses nothing of it but the body, which its conversation may keep: its
// scratch serves the next request without the body's buffer.)
type scratch struct {
	x      exchange
	body   budgetReader // its spare is the buffer of the last body
	watch  watched      // the body's entry in the server's watch
	header http.Header  // empty
	// bodyKept is set when the scratch is free once answered but for the
	// body's buffer.
	bodyKept bool
}

// scratches keeps the scratches of answered requests for the next ones.
type scratches struct{ pool sync.Pool }

// get returns a scratch, one an earlier request left if any.
func (p *scratches) get() *scratch {
	if sc, ok := p.pool.Get().(*scratch); ok {
		return sc
	}
	return &scratch{}
}

// put takes back sc, its body released, with body, the bytes read through
// sc.body, as its spare buffer (nil for none): the caller promises that
// nothing holds sc, body or the header map any more. A buffer larger than
// maxBodyHint is let go.
func (p *scratches) put(sc *scratch, body []byte) {
	sc.x, sc.bodyKept = exchange{}, false
	sc.body = budgetReader{}
	if cap(body) <= maxBodyHint+1 {
		sc.body.spare = body[:0]
	}
	clear(sc.header)
	p.pool.Put(sc)
}
