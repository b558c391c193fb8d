package proxy

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
)

// fakeStore records the batches a writeBehind stores, numbering the
// interactions from 1.
type fakeStore struct {
	mu      sync.Mutex
	batches [][]string // the keys of each batch
	fail    error
}

func (f *fakeStore) store(items []cassette.Keyed) ([]cassette.Appended, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	keys := make([]string, len(items))
	res := make([]cassette.Appended, len(items))
	n := 0
	for _, b := range f.batches {
		n += len(b)
	}
	for k, it := range items {
		keys[k] = it.Key
		res[k].ID = uint64(n + k + 1)
	}
	f.batches = append(f.batches, keys)
	return res, nil
}

func interaction() *cassette.Interaction {
	return &cassette.Interaction{Request: cassette.Request{Method: "POST"}, Response: cassette.Response{Status: 200}}
}

// Slots committed out of order are written in arrival order: a slot waits
// for every earlier one, and an empty slot only lets the later ones go.
func TestWriteBehindKeepsArrivalOrder(t *testing.T) {
	f := &fakeStore{}
	w := &writeBehind{store: f.store}
	var mu sync.Mutex
	var written []string
	settled := make(chan string, 4)
	slots := make([]*slot, 4)
	for n := range slots {
		name := string(rune('a' + n))
		slots[n] = w.arrive(func() { settled <- name })
	}
	commit := func(n int) {
		name := string(rune('a' + n))
		slots[n].commit(interaction(), name, "shape", func(id uint64, err error) {
			if err != nil {
				t.Errorf("slot %s: %v", name, err)
			}
			mu.Lock()
			written = append(written, name)
			mu.Unlock()
		})
	}
	commit(3)
	commit(1)
	slots[2].abandon() // nothing to write
	if got := <-settled; got != "c" {
		t.Fatalf("first settled: %s, want the empty slot c at once", got)
	}
	commit(0)
	for range 3 {
		<-settled
	}
	w.close()
	if want := []string{"a", "b", "d"}; !slices.Equal(written, want) {
		t.Errorf("written in order %v, want %v", written, want)
	}
	for _, b := range f.batches {
		if len(b) == 0 {
			t.Errorf("an empty batch was stored: %v", f.batches)
		}
	}
}

// Closing writes what is ready and drops the slots still open: their
// interactions, committed later, are reported as not written.
func TestWriteBehindCloseDropsOpenSlots(t *testing.T) {
	f := &fakeStore{}
	w := &writeBehind{store: f.store}
	ready := w.arrive(nil)
	open := w.arrive(nil)
	ready.commit(interaction(), "ready", "", nil)
	w.close()
	var got error
	open.commit(interaction(), "open", "", func(_ uint64, err error) { got = err })
	if !errors.Is(got, errTapeClosed) {
		t.Errorf("a slot committed after close: %v, want errTapeClosed", got)
	}
	late := w.arrive(nil)
	late.commit(interaction(), "late", "", func(_ uint64, err error) { got = err })
	if !errors.Is(got, errTapeClosed) {
		t.Errorf("a slot that arrived after close: %v, want errTapeClosed", got)
	}
	if want := [][]string{{"ready"}}; !slices.EqualFunc(f.batches, want, slices.Equal) {
		t.Errorf("stored %v, want %v", f.batches, want)
	}
}

// A failed transaction is reported to every slot of the batch.
func TestWriteBehindReportsAFailedWrite(t *testing.T) {
	boom := errors.New("disk full")
	w := &writeBehind{store: (&fakeStore{fail: boom}).store}
	done := make(chan error, 1)
	w.arrive(nil).commit(interaction(), "k", "", func(_ uint64, err error) { done <- err })
	if err := <-done; !errors.Is(err, boom) {
		t.Errorf("write outcome %v, want %v", err, boom)
	}
	w.close()
}
