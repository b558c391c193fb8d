package wire_test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

// Write reuses the memory of the answers it is done with. What it returned
// keeps its bytes however many answers are written after it, and answers
// written at once, every form of every test answer from 8 goroutines, give
// the bytes each gives written alone.
func TestWriteReusesNothingItReturned(t *testing.T) {
	type job struct {
		name string
		kind wire.Kind
		a    wire.Answer
		opts wire.WriteOptions
		want []byte
	}
	var jobs []job
	var kept []wire.Written
	for name, a := range answers {
		for _, f := range forms() {
			w, err := wire.Write(f.kind, a, f.opts)
			if err != nil {
				continue // a form that cannot carry this answer
			}
			want := bytes.Clone(w.Bytes())
			jobs = append(jobs, job{name + " " + f.name, f.kind, a, f.opts, want})
			kept = append(kept, w)
		}
	}
	if len(jobs) < 20 {
		t.Fatalf("only %d forms written", len(jobs))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for n := range 20 * len(jobs) {
				j := jobs[(n*7+g*13)%len(jobs)]
				w, err := wire.Write(j.kind, j.a, j.opts)
				if err != nil || !bytes.Equal(w.Bytes(), j.want) {
					errs <- fmt.Errorf("%s: written alongside others, %d bytes differ from %d written alone (%v)", j.name, len(w.Bytes()), len(j.want), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, w := range kept {
		if !bytes.Equal(w.Bytes(), jobs[i].want) {
			t.Errorf("%s: the bytes Write returned changed after %d more answers", jobs[i].name, 160*len(jobs))
		}
	}
}
