package store

import (
	"sync"
	"sync/atomic"
)

// DefaultResidentLimit is Options.ResidentLimit when it is zero.
const DefaultResidentLimit = 16 << 20

// resident bounds how much of a read-only store's memory-mapped file stays
// resident in the process. bbolt serves reads straight from its map of the
// file; every page a read touches stays counted in the process's RSS until
// the kernel needs the memory, so random reads over a large cassette grow
// RSS towards the file's size. Reads are charged the bytes they touch, and
// each time the charge passes the limit the map's pages are dropped from
// the process (madvise MADV_DONTNEED, where the system has it). They stay
// in the page cache: the next read of a dropped page is a minor fault. The
// charge is an estimate (a value's bytes and a few pages per read), and the
// kernel maps pages around the one a read faults in, so what stays mapped
// peaks at a few times the limit: random reads over 100 000 interactions
// peaked at 87 MB RSS with a limit of 16 MB, 116 MB with 32 MB.
//
// Dropping is safe only for a map that does not move: a read-only bbolt
// file is mapped once, at open, and unmapped by Close, which waits for a
// drop in progress. A writer remaps the file as it grows, so a writable
// store never drops. The file does not change under the map while the
// store holds its shared lock, so a dropped page reads back the same bytes,
// even by a read in progress.
type resident struct {
	limit   int64 // 0: never drop
	charged atomic.Int64

	mu     sync.RWMutex // held for reading by a drop, for writing by close
	closed bool
	addr   uintptr // the map's first byte
	size   int64   // bytes of the map the file's pages cover
	page   int64   // the file's page size
	drops  atomic.Int64

	lookupsBounded bool // see valuesApart
}

// keepWhole is how many times the limit a file may be and still stay
// mapped whole, never dropped. What stays mapped between drops peaks at a
// few times the limit (the kernel maps 64 KB or a whole folio around the
// page a read faults in, not just that page), so a file no larger than
// that holds no more memory mapped whole, and its reads fault only on a
// page's first touch instead of again after every drop: with drops, a
// cassette of 1 000 interactions (8 MB) served at 0.8 times the rate of
// one of 10.
const keepWhole = 4

// pagesPerRead is what a read is charged beyond its value: the pages of the
// path from a bucket's root to the leaf.
const pagesPerRead = 4

// valuesApart records that Get reads values with pread (see valueTable),
// never through the map: of the file, only the rest of it, all but the
// interactions bucket's valueBytes, is what index lookups can touch. When
// that rest is no larger than a file that stays mapped whole, lookups go
// uncharged and never drop the map's pages (at 100 000 interactions the
// rest is 15 MB). Values read through the map (ForEach, Range) are still
// charged, and drop the pages past the limit.
func (r *resident) valuesApart(valueBytes int64) {
	r.lookupsBounded = r.size-valueBytes <= keepWhole*r.limit
}

// lookup charges an index lookup: the pages of its path to a leaf.
func (r *resident) lookup() {
	if !r.lookupsBounded {
		r.read(0)
	}
}

// read charges a read of a value of n bytes.
func (r *resident) read(n int) {
	r.charge(int64(n) + pagesPerRead*r.page)
}

// charge records that a read touched about n bytes of the map, and drops
// the map's pages from the process once the charges pass the limit.
func (r *resident) charge(n int64) {
	if r.limit <= 0 || r.size <= keepWhole*r.limit || r.charged.Add(n) < r.limit {
		return
	}
	r.charged.Store(0)
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return
	}
	if dropPages(r.addr, r.size) == nil {
		r.drops.Add(1)
	}
}

// close ends the drops; the map may be unmapped once it returns.
func (r *resident) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
}
