package store

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Record is one interaction as the store sees it: opaque bytes with the keys
// it is indexed under.
type Record struct {
	ID    uint64
	Key   string // match key: the exact-lookup index
	Shape string // coarse request shape: the miss-diagnostics index
	Value []byte
}

// Contents is everything Replace writes.
type Contents struct {
	Records  []Record          // written with the ids they carry, which must be 1..n in order
	Fixtures map[string][]byte // call id → fixture
	Meta     Meta              // written as is, except FormatVersion, which is always FormatVersion
}

// errNoneStored rolls back an AppendAll that stored nothing.
var errNoneStored = errors.New("no interaction to store")

// A Pending is one interaction for AppendAll, before it has an id.
type Pending struct {
	Key, Shape string
	// Encode is given the new id and returns the bytes to store.
	Encode func(id uint64) ([]byte, error)
}

// An Appended is the outcome of one Pending: its id, or why it was not
// stored.
type Appended struct {
	ID  uint64
	Err error
}

// AppendAll stores interactions in order, with consecutive ids, in one
// transaction: one pair of disk syncs for the lot. One whose Encode fails
// is left out (its Appended holds the error, and it takes no id); the
// others are stored. An error from the transaction itself stores none of
// them.
//
// In a store opened with Options.Overwrite, the first AppendAll that stores
// an interaction first removes the old contents, in the same transaction.
func (s *Store) AppendAll(recs []Pending) ([]Appended, error) {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	if !s.reset { // a reset leaves no record in the old format
		if err := s.upgradeFile(); err != nil {
			return nil, err
		}
	}
	res := make([]Appended, len(recs))
	err := s.update(func(tx *bolt.Tx) error {
		if s.reset {
			if err := clearContents(tx, s.now().UTC()); err != nil {
				return err
			}
		}
		m, err := getMeta(tx)
		if err != nil {
			return err
		}
		b := tx.Bucket(bucketInteractions)
		ib, sb := tx.Bucket(bucketIndex), tx.Bucket(bucketShapes)
		seq := b.Sequence()
		for k, r := range recs {
			id := seq + 1
			var value []byte
			if err := callback(func() (err error) { value, err = r.Encode(id); return err }); err != nil {
				res[k] = Appended{Err: fmt.Errorf("cassette %s: append: %w", s.path, err)}
				continue
			}
			if err := b.Put(idKey(id), value); err != nil {
				return err
			}
			if err := ib.Put(indexKey(r.Key, id), nil); err != nil {
				return err
			}
			if err := sb.Put(indexKey(r.Shape, id), nil); err != nil {
				return err
			}
			seq = id
			res[k] = Appended{ID: id}
		}
		if seq == b.Sequence() {
			return errNoneStored // nothing to commit
		}
		if err := b.SetSequence(seq); err != nil {
			return err
		}
		m.FormatVersion, m.Updated = FormatVersion, s.now().UTC()
		return putMeta(tx, m)
	})
	if err != nil && !errors.Is(err, errNoneStored) {
		return nil, err
	}
	if err == nil {
		s.reset = false
	}
	return res, nil
}

// CopyBatch is about how many bytes CopyTo writes into its destination in
// one transaction: bbolt holds every page a transaction writes in memory
// until its commit, so this, not the cassette's size, bounds the memory a
// copy takes (about twice this, for the records and their pages).
const CopyBatch = 8 << 20

// CopyTo writes the whole cassette into dst: every record as convert
// returns it, both indexes and the fixtures as they are, and last the
// metadata (index rules included) stamped with FormatVersion. What dst
// held before is removed. It is how a cassette of an older format is
// rewritten without recomputing its index: the keys stay those it was
// built with.
//
// dst is written as a Fill: in transactions of about batch bytes each
// (CopyBatch when batch is not positive), so that memory holds one batch
// however large the cassette. Until CopyTo returns, dst holds a part of
// the contents and no metadata (it opens as no cassette), and a CopyTo
// that fails leaves it so: dst must be a draft, a file that is put in
// place only once whole, and discarded otherwise.
func (s *Store) CopyTo(dst *Store, convert func(id uint64, old []byte) ([]byte, error), batch int64) error {
	if batch <= 0 {
		batch = CopyBatch
	}
	return s.view("read", func(src *bolt.Tx) error {
		f, err := dst.Fill()
		if err != nil {
			return err
		}
		// The source's pages read by each batch are dropped from the
		// process (they stay in the page cache, and the bytes the read
		// transaction holds stay valid: they fault in again), so that
		// what the copy holds mapped stays bounded too. No write moves
		// the source's map while its read transaction is open.
		addr, size := s.db.Load().Info().Data, src.Size()
		drop := func() { _ = dropPages(addr, size) }
		for _, name := range [][]byte{bucketInteractions, bucketIndex, bucketShapes, bucketFixtures} {
			if err := f.copyBucket(src.Bucket(name), name, bytes.Equal(name, bucketInteractions), convert, batch, drop); err != nil {
				return err
			}
		}
		m, err := getMeta(src)
		if err != nil {
			return err
		}
		m.FormatVersion = FormatVersion
		return f.finish(func(tx *bolt.Tx) error { return putMeta(tx, m) })
	})
}

// emptyBuckets replaces the interactions, both indexes and the fixtures by
// empty buckets (whose sequence, the last id, starts again at 0).
func emptyBuckets(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketInteractions, bucketIndex, bucketShapes, bucketFixtures} {
		if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return err
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	return nil
}

// clearContents empties the interactions, both indexes and the fixtures,
// and makes the metadata say the cassette was created at now. The index
// rules are kept: what is appended next is indexed under them.
func clearContents(tx *bolt.Tx, now time.Time) error {
	if err := emptyBuckets(tx); err != nil {
		return err
	}
	m, err := getMeta(tx)
	if err != nil {
		return err
	}
	m.Created, m.Updated = now, now
	return putMeta(tx, m)
}

// Replace rewrites the whole cassette — interactions, both indexes, fixtures
// and metadata — in one transaction: a reader or a crash sees the old
// contents or the new, never a mix.
func (s *Store) Replace(c Contents) error {
	for i, r := range c.Records {
		if r.ID != uint64(i+1) {
			return fmt.Errorf("cassette %s: replace: record %d has id %d, want %d", s.path, i, r.ID, i+1)
		}
	}
	return s.update(func(tx *bolt.Tx) error {
		if err := emptyBuckets(tx); err != nil {
			return err
		}
		// Every bucket is written in key order, so its pages are filled
		// whole before they split (bbolt's default leaves them half
		// empty, for inserts in the middle): fewer pages to write, and to
		// check at open.
		ib := tx.Bucket(bucketInteractions)
		ib.FillPercent = 1.0
		for _, r := range c.Records {
			if err := ib.Put(idKey(r.ID), r.Value); err != nil {
				return err
			}
		}
		// bbolt splits nodes only at commit, so a transaction's puts into
		// one bucket go into one growing node: in random key order (match
		// keys are hashes) each put shifts half of it, which made a
		// 100 000-interaction Replace take a minute. In key order they append.
		keys := make([][]byte, len(c.Records))
		for _, idx := range []struct {
			bucket []byte
			key    func(Record) string
		}{{bucketIndex, func(r Record) string { return r.Key }}, {bucketShapes, func(r Record) string { return r.Shape }}} {
			for i, r := range c.Records {
				keys[i] = indexKey(idx.key(r), r.ID)
			}
			slices.SortFunc(keys, bytes.Compare)
			b := tx.Bucket(idx.bucket)
			b.FillPercent = 1.0
			for _, k := range keys {
				if err := b.Put(k, nil); err != nil {
					return err
				}
			}
		}
		if err := ib.SetSequence(uint64(len(c.Records))); err != nil {
			return err
		}
		fb := tx.Bucket(bucketFixtures)
		for id, v := range c.Fixtures {
			if err := fb.Put([]byte(id), v); err != nil {
				return err
			}
		}
		c.Meta.FormatVersion = FormatVersion
		return putMeta(tx, c.Meta)
	})
}
