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
