package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// A Fill writes the whole contents of a new cassette batch by batch, each
// batch in a transaction of its own, so that memory holds one batch of
// records rather than all of them (Replace holds every record, and bbolt a
// copy of every page, until its one commit). The transactions are not
// flushed to disk one by one: a Fill is for a file no one else reads yet,
// such as a new cassette built under a temporary name and renamed into
// place once whole and flushed (package cassette's Draft). Until Finish
// returns the file holds a part of the contents, and a Fill that fails or
// is abandoned leaves it so: discard the file.
type Fill struct {
	s      *Store
	next   uint64   // the id the next record must carry
	index  [][]byte // index keys of the records added, in any order
	shapes [][]byte
}

// Fill starts filling the store, removing what it held, its metadata
// included: until Finish writes it, the file opens as no cassette at all
// (ErrNotCassette), so a part of the contents can never pass for the
// whole. The store must be writable and used by nothing else until Finish.
func (s *Store) Fill() (*Fill, error) {
	err := s.update(func(tx *bolt.Tx) error {
		if err := emptyBuckets(tx); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Delete(keyMeta)
	})
	if err != nil {
		return nil, err
	}
	s.db.Load().NoSync, s.db.Load().NoGrowSync = true, true
	return &Fill{s: s, next: 1}, nil
}

// Add writes records, whose ids must continue those added before (the
// first is 1), in one transaction. The index keys are written by Finish,
// all at once and in order.
func (f *Fill) Add(recs []Record) error {
	for k, r := range recs {
		if r.ID != f.next+uint64(k) {
			return fmt.Errorf("cassette %s: fill: record has id %d, want %d", f.s.path, r.ID, f.next+uint64(k))
		}
	}
	err := f.commit(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketInteractions)
		b.FillPercent = 1.0 // ids come in order: fill each page whole
		for _, r := range recs {
			if err := b.Put(idKey(r.ID), r.Value); err != nil {
				return err
			}
		}
		return b.SetSequence(f.next + uint64(len(recs)) - 1)
	})
	if err != nil {
		return err
	}
	for _, r := range recs {
		f.index = append(f.index, indexKey(r.Key, r.ID))
		f.shapes = append(f.shapes, indexKey(r.Shape, r.ID))
	}
	f.next += uint64(len(recs))
	return nil
}

// commit runs fn as one batch: a transaction of its own, whose pages the
// disk then writes while the next batches are prepared, rather than all at
// the flush at the end.
func (f *Fill) commit(fn func(tx *bolt.Tx) error) error {
	if err := f.s.update(fn); err != nil {
		return err
	}
	startWriteback(f.s.path)
	return nil
}

// Finish writes both indexes, the fixtures and the metadata (stamped with
// FormatVersion) in a last transaction, and flushes the file to disk.
func (f *Fill) Finish(fixtures map[string][]byte, meta Meta) error {
	return f.finish(func(tx *bolt.Tx) error {
		for _, idx := range []struct {
			bucket []byte
			keys   [][]byte
		}{{bucketIndex, f.index}, {bucketShapes, f.shapes}} {
			// In key order bbolt appends (see Replace).
			slices.SortFunc(idx.keys, bytes.Compare)
			b := tx.Bucket(idx.bucket)
			b.FillPercent = 1.0
			for _, k := range idx.keys {
				if err := b.Put(k, nil); err != nil {
					return err
				}
			}
		}
		fb := tx.Bucket(bucketFixtures)
		for id, v := range fixtures {
			if err := fb.Put([]byte(id), v); err != nil {
				return err
			}
		}
		meta.FormatVersion = FormatVersion
		return putMeta(tx, meta)
	})
}

// finish runs fn, which must write the metadata, as the last transaction,
// and flushes the file to disk.
func (f *Fill) finish(fn func(tx *bolt.Tx) error) error {
	s := f.s
	err := s.update(fn)
	f.index, f.shapes = nil, nil
	s.db.Load().NoSync, s.db.Load().NoGrowSync = false, false
	if err != nil {
		return err
	}
	if err := s.db.Load().Sync(); err != nil {
		return fmt.Errorf("cassette %s: %w", s.path, err)
	}
	return nil
}

// copyBucket copies every key of from, a bucket of another store, into the
// bucket of the same name, in key order (so that bbolt appends to full
// pages), converting the values of records with convert. It writes in
// batches of about limit bytes, each a transaction of its own, so that
// memory holds one batch's pages however large the bucket; the last batch
// sets the bucket's sequence to from's. The bytes of from must stay valid
// throughout: its read transaction outlives the copy. after is called
// after each batch.
func (f *Fill) copyBucket(from *bolt.Bucket, name []byte, records bool, convert func(id uint64, old []byte) ([]byte, error), limit int64, after func()) error {
	c := from.Cursor()
	k, v := c.First()
	for {
		err := f.commit(func(tx *bolt.Tx) error {
			to := tx.Bucket(name)
			to.FillPercent = 1.0
			var n int64
			for ; k != nil && (n == 0 || n < limit); k, v = c.Next() {
				val := v
				if records {
					if len(k) != 8 {
						return fmt.Errorf("corrupt interaction key %x", k)
					}
					id := binary.BigEndian.Uint64(k)
					if err := callback(func() (err error) { val, err = convert(id, v); return err }); err != nil {
						return err
					}
				}
				if err := to.Put(k, val); err != nil {
					return err
				}
				n += int64(len(k) + len(val))
			}
			if k != nil {
				return nil
			}
			return to.SetSequence(from.Sequence())
		})
		if err != nil || k == nil {
			return err
		}
		after()
	}
}
