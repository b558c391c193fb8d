package proxy

import (
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/llmproxy/llmproxy/cassette"
)

// replyCache keeps in memory what replay read from a read-only cassette: the
// recordings of each match key looked up, and each reply served, with its
// headers as the response map holds them. A request whose key and reply are
// kept is served with no read transaction, no read of the file and no
// decoding of the record. A read-only cassette cannot change while it is
// open (its store holds a shared lock), so nothing kept goes stale.
//
// What a cache holds counts against its server's cacheBudget. Nothing is
// evicted: once the budget is spent, what is not kept is read from the file
// as if there were no cache, so a cassette larger than the budget keeps the
// answers served first, and memory stays bounded however many are served.
type replyCache struct {
	budget *cacheBudget
	held   atomic.Int64 // bytes of the budget this cache took

	mu  sync.RWMutex
	ids map[string][]uint64 // by match key

	// replies are by interaction id, for ids up to n (ids count from 1 in
	// a cassette this project writes), made when the first reply is kept.
	n       int
	replies atomic.Pointer[[]atomic.Pointer[cachedReply]]
}

// cachedReply is a reply kept by a replyCache.
type cachedReply struct {
	rep cassette.Reply // a clone: holds none of the file's bytes
	// header is rep's headers as Reply.SetHeaders sets them, with the
	// proxy's sandbox over them (see sandbox). Every serve of the reply
	// puts these same value slices into its response's header map, so
	// they are never changed: each has len == cap, so that an append made
	// by a later header writer copies it.
	header http.Header
}

// cacheBudget bounds the bytes the replay caches of one server hold
// together.
type cacheBudget struct {
	limit int64
	used  atomic.Int64
}

// DefaultReplyCache is the replay cache's budget when Config.ReplyCache is
// zero: 16 MiB, several thousand answers of 2 KB with their headers.
const DefaultReplyCache = 16 << 20

// cacheOverhead is what a kept entry is counted beyond its bytes: the map
// entry or slot, the struct, the slice and string headers.
const cacheOverhead = 128

// take reserves n bytes, and reports whether the budget had room.
func (b *cacheBudget) take(n int64) bool {
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		return false
	}
	return true
}

// newReplyCache is the cache of a read-only cassette holding n
// interactions, nil when there is no budget.
func newReplyCache(b *cacheBudget, n int) *replyCache {
	if b == nil || b.limit <= 0 {
		return nil
	}
	return &replyCache{budget: b, ids: map[string][]uint64{}, n: n}
}

// lookup returns the recordings kept for a match key, nil when none are.
func (c *replyCache) lookup(key string) []uint64 {
	if c == nil {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.ids[key]
}

// keepIDs keeps the recordings of a match key, if the budget has room.
// ids is never changed afterwards.
func (c *replyCache) keepIDs(key string, ids []uint64) {
	if c == nil || len(ids) == 0 || !c.take(int64(len(key)+8*len(ids)+cacheOverhead)) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids[key] = ids
}

// reply returns the kept reply of interaction id, nil when it is not kept.
func (c *replyCache) reply(id uint64) *cachedReply {
	if c == nil {
		return nil
	}
	if s := c.replies.Load(); s != nil && id < uint64(len(*s)) {
		return (*s)[id].Load()
	}
	return nil
}

// slots returns the slots of the replies, made on first use if the budget
// has room for them (8 bytes an interaction), or nil.
func (c *replyCache) slots() []atomic.Pointer[cachedReply] {
	if s := c.replies.Load(); s != nil {
		return *s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.replies.Load(); s != nil {
		return *s
	}
	if !c.take(int64(c.n+1) * 8) {
		return nil
	}
	s := make([]atomic.Pointer[cachedReply], c.n+1)
	c.replies.Store(&s)
	return s
}

// keep keeps a copy of interaction id's reply, if the budget has room, and
// returns it; nil when it is not kept. rep may hold the file's bytes: what
// is kept does not.
func (c *replyCache) keep(id uint64, rep *cassette.Reply) *cachedReply {
	if c == nil || id > uint64(c.n) {
		return nil
	}
	slots := c.slots()
	if slots == nil {
		return nil
	}
	if k := slots[id].Load(); k != nil {
		return k
	}
	if c.budget.used.Load()+int64(rep.Size()) > c.budget.limit {
		return nil // spent: no copy made only to be let go
	}
	k := &cachedReply{rep: rep.Clone(), header: http.Header{}}
	k.rep.SetHeaders(k.header)
	sandbox(k.header)
	for name, vs := range k.header {
		k.header[name] = slices.Clip(vs) // no room to grow: see header
	}
	size := int64(rep.Size() + cacheOverhead)
	for name, vs := range k.header {
		size += int64(len(name) + 16 + cacheOverhead/2)
		for _, v := range vs {
			size += int64(len(v) + 16)
		}
	}
	if !c.take(size) {
		return nil
	}
	if !slots[id].CompareAndSwap(nil, k) {
		c.give(size) // another request kept it first
		return slots[id].Load()
	}
	return k
}

// take reserves n bytes of the budget for the cache.
func (c *replyCache) take(n int64) bool {
	if !c.budget.take(n) {
		return false
	}
	c.held.Add(n)
	return true
}

// give returns n bytes to the budget.
func (c *replyCache) give(n int64) {
	c.held.Add(-n)
	c.budget.used.Add(-n)
}

// drop returns what the cache holds to the budget, once its cassette is
// closed and nothing serves from it.
func (c *replyCache) drop() {
	if c != nil {
		c.budget.used.Add(-c.held.Swap(0))
	}
}

// setHeaders sets the reply's headers in h, as rep.SetHeaders would.
func (k *cachedReply) setHeaders(h http.Header) {
	for name, vs := range k.header {
		h[name] = vs
	}
}
