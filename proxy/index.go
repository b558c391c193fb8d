package proxy

import (
	"fmt"
	"sync"

	"github.com/llmproxy/llmproxy/cassette"
)

// index finds a cassette's recordings by match key and by shape (method,
// upstream and path). It reads the cassette's own index, kept on disk in
// the transaction of each write, unless that index was built under other
// matching rules and the cassette is read-only: then it answers from a copy
// built in memory when the cassette was opened.
type index struct {
	c *cassette.Cassette

	mu sync.RWMutex
	// keys and shapes are the copy in memory, nil when the cassette's own
	// index is used.
	keys, shapes map[string][]uint64
}

// openIndex makes the index of an open cassette by x: a cassette indexed
// under other rules is reindexed on disk, or in memory when it is
// read-only. An empty cassette only takes x's fingerprint.
func openIndex(c *cassette.Cassette, x *cassette.Indexer) (*index, error) {
	ix := &index{c: c}
	meta, err := c.Meta()
	if err != nil {
		return nil, err
	}
	if meta.IndexRules == x.Fingerprint() {
		return ix, nil
	}
	n, err := c.Len()
	if err != nil {
		return nil, err
	}
	switch {
	case c.ReadOnly():
		err = ix.build(x)
	case n == 0:
		err = c.SetIndexRules(x.Fingerprint())
	default:
		var ct *cassette.Contents
		if ct, err = c.Load(); err == nil {
			ct.Meta.IndexRules = x.Fingerprint()
			err = c.Replace(ct, x.Keys)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	return ix, nil
}

// build makes the copy in memory.
func (ix *index) build(x *cassette.Indexer) error {
	keys, shapes := map[string][]uint64{}, map[string][]uint64{}
	err := ix.c.ForEach(func(i *cassette.Interaction) error {
		key, shape, err := x.Keys(i)
		if err != nil {
			return fmt.Errorf("interaction %d: %w", i.ID, err)
		}
		keys[key] = append(keys[key], i.ID)
		shapes[shape] = append(shapes[shape], i.ID)
		return nil
	})
	ix.keys, ix.shapes = keys, shapes
	return err
}

// lookup returns the recordings of a match key, in recorded order.
func (ix *index) lookup(key string) ([]uint64, error) {
	if ix.keys == nil {
		return ix.c.Lookup(key)
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.keys[key], nil
}

// lookupIn is lookup inside a read transaction of the cassette.
func (ix *index) lookupIn(r *cassette.Reader, key string) ([]uint64, error) {
	if ix.keys == nil {
		return r.Lookup(key)
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.keys[key], nil
}

// shape returns the recordings of a shape, in recorded order.
func (ix *index) shape(shape string) ([]uint64, error) {
	if ix.shapes == nil {
		return ix.c.Shape(shape)
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.shapes[shape], nil
}

// append stores interactions in one transaction with their index entries,
// and adds them to the copy in memory if there is one.
func (ix *index) append(items []cassette.Keyed) ([]cassette.Appended, error) {
	res, err := ix.c.AppendAll(items)
	if err != nil || ix.keys == nil {
		return res, err
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for k, r := range res {
		if r.Err == nil {
			ix.keys[items[k].Key] = append(ix.keys[items[k].Key], r.ID)
			ix.shapes[items[k].Shape] = append(ix.shapes[items[k].Shape], r.ID)
		}
	}
	return res, nil
}
