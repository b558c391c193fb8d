package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// Get returns the interaction with the given id.
func (s *Store) Get(id uint64) ([]byte, error) {
	var v []byte
	if s.values != nil {
		err := s.Read(func(tx *Tx) error {
			got, err := tx.Get(id)
			v = bytes.Clone(got)
			return err
		})
		return v, err
	}
	err := s.view("read", func(tx *bolt.Tx) error {
		got := tx.Bucket(bucketInteractions).Get(idKey(id))
		if got == nil {
			return ErrNotFound
		}
		v = bytes.Clone(got)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cassette %s: interaction %d: %w", s.path, id, err)
	}
	s.res.read(len(v))
	return v, nil
}

// Lookup returns, in recorded order, the ids of the interactions indexed under
// the match key. Its cost does not grow with the size of the cassette.
func (s *Store) Lookup(key string) ([]uint64, error) {
	return s.seek(bucketIndex, key)
}

// Shape returns, in recorded order, the ids of the interactions with the
// given coarse request shape.
func (s *Store) Shape(shape string) ([]uint64, error) {
	return s.seek(bucketShapes, shape)
}

func (s *Store) seek(bucket []byte, key string) ([]uint64, error) {
	var ids []uint64
	err := s.view("read", func(tx *bolt.Tx) error {
		ids = seek(tx, bucket, key)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cassette %s: %w", s.path, err)
	}
	s.res.lookup()
	return ids, nil
}

// seek returns the ids an index bucket holds under key, in recorded order.
func seek(tx *bolt.Tx, bucket []byte, key string) []uint64 {
	return seekIn(tx.Bucket(bucket), key)
}

// seekIn is seek in an open bucket.
func seekIn(b *bolt.Bucket, key string) []uint64 {
	var ids []uint64
	var buf [80]byte
	prefix := appendIndexPrefix(buf[:0], key)
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) == len(prefix)+8 {
			ids = append(ids, binary.BigEndian.Uint64(k[len(prefix):]))
		}
	}
	return ids
}

// A Tx is one read transaction of the store (see Read).
type Tx struct {
	tx   *bolt.Tx
	path string
	res  *resident
	// values, in a read-only store that has them, locates the values Get
	// reads from file, into buf (reused by the next Read).
	values *valueTable
	file   *os.File
	buf    []byte
	// index and interactions are the transaction's buckets, opened once;
	// nil until first used.
	index, interactions *bolt.Bucket
}

// bucket returns the transaction's bucket named name, opening it once.
func (t *Tx) bucket(b **bolt.Bucket, name []byte) *bolt.Bucket {
	if *b == nil {
		*b = t.tx.Bucket(name)
	}
	return *b
}

// Read runs fn in one read transaction. The bytes a Tx returns are the
// file's mapped pages, or in a read-only store the values Get read into
// the transaction's buffer: valid only until fn returns, and never to be
// changed. While fn runs, a write of this process that must grow the file
// (and with it the memory map) waits for fn to return; no other write
// waits. A damaged page that a Tx method meets is its error, wrapping
// ErrCorrupt; any other panic in fn is fn's own, passed on.
//
// In a read-only store, which no process can write while it is open, a
// transaction is not begun for each Read: Read takes one that an earlier
// Read ended, with its buckets already open, and gives it back after fn.
// There are never more of them than Reads running at once, and Close ends
// them all.
func (s *Store) Read(fn func(tx *Tx) error) error {
	if !s.readOnly {
		return s.view("read", func(tx *bolt.Tx) error {
			return callback(func() error { return fn(&Tx{tx: tx, path: s.path, res: &s.res}) })
		})
	}
	var (
		t    *Tx
		keep bool
	)
	defer func() {
		if t != nil {
			// A transaction that met a damaged page, or whose fn failed or
			// panicked, is ended rather than kept.
			s.txs.put(t, keep)
		}
	}()
	err := s.guard("read", func() error {
		var err error
		if t, err = s.txs.get(s.db.Load()); err != nil {
			return err
		}
		t.path, t.res, t.values, t.file = s.path, &s.res, s.values, s.file
		return callback(func() error { return fn(t) })
	})
	keep = err == nil
	return err
}

// txPool holds the idle read transactions of a read-only store.
type txPool struct {
	mu     sync.Mutex
	idle   []*Tx
	closed bool
}

// get returns an idle transaction, or begins one.
func (p *txPool) get(db *bolt.DB) (*Tx, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 && !p.closed {
		t := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return t, nil
	}
	p.mu.Unlock()
	tx, err := db.Begin(false)
	if err != nil {
		return nil, err
	}
	return &Tx{tx: tx}, nil
}

// put gives t back for reuse if keep is set and the pool is open, and
// otherwise ends it.
func (p *txPool) put(t *Tx, keep bool) {
	p.mu.Lock()
	if keep && !p.closed {
		t.reuse()
		p.idle = append(p.idle, t)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	_ = t.tx.Rollback()
}

// close ends the idle transactions; a transaction in use is ended when it
// is given back.
func (p *txPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, t := range idle {
		_ = t.tx.Rollback()
	}
}

// read runs a read of the transaction's pages, and turns bbolt's panic on
// a damaged page (or a fault on the memory map, which guard makes a
// panic) into an error naming the file and what was read.
// what names the read, and is called only for that error.
func (t *Tx) read(what func() string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cassette %s: %s: %v: %w", t.path, what(), r, ErrCorrupt)
		}
	}()
	return fn()
}

// Lookup returns, in recorded order, the ids indexed under a match key.
func (t *Tx) Lookup(key string) (ids []uint64, err error) {
	err = t.read(func() string { return "index" }, func() error { ids = seekIn(t.bucket(&t.index, bucketIndex), key); return nil })
	t.res.lookup()
	return ids, err
}

// Get returns the stored record of an interaction: the file's own mapped
// bytes, or, in a read-only store, a copy read from the file (see
// valueTable), in a buffer of the transaction that a later Read reuses.
// Either is valid only until the Read's fn returns, and never to be
// changed.
func (t *Tx) Get(id uint64) (v []byte, err error) {
	if t.values != nil {
		return t.readValue(id)
	}
	err = t.read(func() string { return fmt.Sprint("interaction ", id) }, func() error {
		if v = t.bucket(&t.interactions, bucketInteractions).Get(idKey(id)); v == nil {
			return fmt.Errorf("cassette %s: interaction %d: %w", t.path, id, ErrNotFound)
		}
		return nil
	})
	t.res.read(len(v))
	return v, err
}

// Len is the number of interactions.
func (s *Store) Len() (int, error) {
	if s.values != nil {
		// A read-only store's file does not change while it is open: its
		// open walk found every interaction, and Stats, which visits every
		// page again, cost 1.7 ms at 1 000 interactions.
		return s.values.count, nil
	}
	var n int
	err := s.view("read", func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketInteractions).Stats().KeyN
		return nil
	})
	return n, err
}

// ForEach calls fn for each interaction in recorded order, in one read
// transaction; value is only valid during the call. An error from fn stops
// the walk and is returned.
func (s *Store) ForEach(fn func(id uint64, value []byte) error) error {
	return s.view("read", func(tx *bolt.Tx) error {
		return tx.Bucket(bucketInteractions).ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("cassette %s: corrupt interaction key %x", s.path, k)
			}
			s.res.read(len(v))
			return callback(func() error { return fn(binary.BigEndian.Uint64(k), v) })
		})
	})
}

// Last returns the id of the newest interaction, 0 when there is none.
// Ids count from 1 with no gaps, so it is also their number, found without
// walking the file (Len walks it).
func (s *Store) Last() (uint64, error) {
	var id uint64
	err := s.view("read", func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketInteractions).Cursor().Last(); len(k) == 8 {
			id = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return id, err
}

// Range calls fn for the interactions from id from onwards in recorded
// order, or, when back is set, from id from down to the first, in one read
// transaction; value is only valid during the call. The walk stops when fn
// returns false or an error (which Range returns). Its cost is that of the
// interactions visited, whatever the size of the cassette.
func (s *Store) Range(from uint64, back bool, fn func(id uint64, value []byte) (bool, error)) error {
	return s.view("read", func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketInteractions).Cursor()
		k, v := c.Seek(idKey(from))
		if back && (k == nil || binary.BigEndian.Uint64(k) > from) {
			if k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
		}
		for ; k != nil; k, v = step(c, back) {
			if len(k) != 8 {
				return fmt.Errorf("cassette %s: corrupt interaction key %x", s.path, k)
			}
			s.res.read(len(v))
			var more bool
			err := callback(func() (err error) {
				more, err = fn(binary.BigEndian.Uint64(k), v)
				return err
			})
			if err != nil || !more {
				return err
			}
		}
		return nil
	})
}

// step moves a cursor one key forwards, or backwards when back is set.
func step(c *bolt.Cursor, back bool) ([]byte, []byte) {
	if back {
		return c.Prev()
	}
	return c.Next()
}

// Fixture returns the fixture stored for a tool call id.
func (s *Store) Fixture(callID string) ([]byte, error) {
	var v []byte
	err := s.view("read", func(tx *bolt.Tx) error {
		got := tx.Bucket(bucketFixtures).Get([]byte(callID))
		if got == nil {
			return ErrNotFound
		}
		v = bytes.Clone(got)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cassette %s: fixture %q: %w", s.path, callID, err)
	}
	s.res.read(len(v))
	return v, nil
}

// Fixtures calls fn for each fixture in call id order; v is only valid during
// the call.
func (s *Store) Fixtures(fn func(callID string, v []byte) error) error {
	return s.view("read", func(tx *bolt.Tx) error {
		return tx.Bucket(bucketFixtures).ForEach(func(k, v []byte) error {
			return callback(func() error { return fn(string(k), v) })
		})
	})
}
