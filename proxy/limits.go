package proxy

import (
	"errors"
	"io"
	"sync"
)

// errBodyBudget is why a request body was refused: the bodies of the
// requests in flight already hold Config.MaxBodyTotal bytes.
var errBodyBudget = errors.New("request bodies in flight are over their total limit")

// bodyBudget bounds the bytes of request bodies held at once.
type bodyBudget struct {
	mu    sync.Mutex
	limit int64
	used  int64
}

// take reserves n bytes, or reports false when that would pass the limit.
func (b *bodyBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

// give returns n bytes taken earlier.
func (b *bodyBudget) give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

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

// bodyReaders keeps the budgetReaders, with their buffers, of request
// bodies that nothing kept once their request was answered, for the bodies
// of the next requests: a replayed request then reads its body into memory
// it does not allocate.
type bodyReaders struct{ pool sync.Pool }

// get returns a reader of body, charging budget, whose spare buffer is one
// an earlier body left, if any.
func (p *bodyReaders) get(body io.ReadCloser, budget *bodyBudget) *budgetReader {
	br, _ := p.pool.Get().(*budgetReader)
	if br == nil {
		br = &budgetReader{}
	}
	br.r, br.b = body, budget
	return br
}

// put takes back br, released, with body, the bytes read through it, as
// its spare buffer: the caller promises that nothing holds body any more.
// A buffer larger than maxBodyHint is let go.
func (p *bodyReaders) put(br *budgetReader, body []byte) {
	br.r, br.b, br.spare = nil, nil, nil
	if cap(body) <= maxBodyHint+1 {
		br.spare = body[:0]
	}
	p.pool.Put(br)
}
