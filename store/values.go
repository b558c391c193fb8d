package store

import (
	"errors"
	"fmt"
	"os"
)

// valuePlace is where one interaction's value lies in the file.
type valuePlace struct {
	id  uint64
	off int64
	n   uint32
}

// valueTable locates each interaction's value in a read-only store's file,
// by id, as the page walk at open found it: a read-only store reads a value
// with one pread at its place instead of through bbolt's memory map, so
// that serving a value maps none of the file into the process. A value
// spilling into overflow pages is contiguous in the file, so one read
// suffices for any value. The places stay right while the store holds its
// shared lock: no process writes the file.
//
// Ids count from 1 with no gaps, so the table is two slices indexed by id:
// 12 bytes an interaction, 1.2 MB for 100 000.
type valueTable struct {
	off []int64 // 0: no interaction has the id (offset 0 is a meta page)
	n   []uint32
	// pageBytes is the size of the interactions bucket's pages, which
	// reads by the table leave unmapped.
	pageBytes int64
	// count is the number of interactions.
	count int
}

// maxSparseIDs is how many more slots than values a table may hold: a file
// whose ids are sparser than that (never one this package writes) gets no
// table, and its values are read through the map.
const maxSparseIDs = 1024

// newValueTable builds the table of the places found, nil when there are
// none or the ids are too sparse.
func newValueTable(places []valuePlace) *valueTable {
	if len(places) == 0 {
		return nil
	}
	var last uint64
	for _, p := range places {
		last = max(last, p.id)
	}
	if last >= uint64(2*len(places)+maxSparseIDs) {
		return nil
	}
	t := &valueTable{off: make([]int64, last+1), n: make([]uint32, last+1), count: len(places)}
	for _, p := range places {
		t.off[p.id], t.n[p.id] = p.off, p.n
	}
	return t
}

// at returns the place of interaction id's value, and whether there is one.
func (t *valueTable) at(id uint64) (off int64, n uint32, ok bool) {
	if id >= uint64(len(t.off)) || t.off[id] == 0 {
		return 0, 0, false
	}
	return t.off[id], t.n[id], true
}

// maxKeptBuffer bounds the buffer a pooled Tx keeps between Reads: a larger
// one, grown for a large value, is let go.
const maxKeptBuffer = 1 << 20

// readValue reads interaction id's value from the file with one pread, into
// the transaction's buffer: the bytes stay valid until the transaction's
// Read returns, and later reads of the same Read do not overwrite them.
func (t *Tx) readValue(id uint64) ([]byte, error) {
	off, n, ok := t.values.at(id)
	if !ok {
		return nil, fmt.Errorf("cassette %s: interaction %d: %w", t.path, id, ErrNotFound)
	}
	if cap(t.buf)-len(t.buf) < int(n) {
		t.buf = make([]byte, 0, max(int(n), 2*cap(t.buf), 4096))
	}
	start := len(t.buf)
	t.buf = t.buf[:start+int(n)]
	v := t.buf[start : start+int(n) : start+int(n)]
	if _, err := t.file.ReadAt(v, off); err != nil {
		if errors.Is(err, os.ErrClosed) {
			return nil, fmt.Errorf("cassette %s: interaction %d: %w", t.path, id, err)
		}
		return nil, fmt.Errorf("cassette %s: interaction %d: reading its %d bytes at offset %d: %v (the file changed since it was opened?): %w", t.path, id, n, off, err, ErrCorrupt)
	}
	return v, nil
}

// reuse readies the transaction's buffer for the next Read.
func (t *Tx) reuse() {
	if cap(t.buf) > maxKeptBuffer {
		t.buf = nil
	}
	t.buf = t.buf[:0]
}
