package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/llmproxy/llmproxy/store"
)

// CopyTo writes its destination in transactions of about the batch size:
// with a batch of one byte each record is committed before the next is
// converted, and with the default batch a small cassette is one
// transaction. The copy holds every record, index key, fixture and the
// metadata.
func TestCopyToInBatches(t *testing.T) {
	dir := t.TempDir()
	src := mustOpen(t, filepath.Join(dir, "src.cassette"), nil)
	const n = 40
	recs := make([]store.Record, n)
	for k := range recs {
		id := uint64(k + 1)
		recs[k] = store.Record{ID: id, Key: fmt.Sprint("key-", id%3), Shape: fmt.Sprint("shape-", id%2), Value: []byte(fmt.Sprint("old ", id))}
	}
	if err := src.Replace(store.Contents{Records: recs, Fixtures: map[string][]byte{"call_1": []byte(`{"a":1}`)}, Meta: store.Meta{IndexRules: "rules"}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		batch     int64
		committed func(id uint64) uint64 // what the copy holds when record id is converted
	}{
		{1, func(id uint64) uint64 { return id - 1 }},
		{0, func(uint64) uint64 { return 0 }},
	} {
		dst := mustOpen(t, filepath.Join(dir, fmt.Sprint("dst-", tc.batch, ".cassette")), nil)
		convert := func(id uint64, old []byte) ([]byte, error) {
			if last, err := dst.Last(); err != nil || last != tc.committed(id) {
				return nil, fmt.Errorf("converting %d the copy holds %d (%v), want %d", id, last, err, tc.committed(id))
			}
			return bytes.Replace(old, []byte("old"), []byte("new"), 1), nil
		}
		if err := src.CopyTo(dst, convert, tc.batch); err != nil {
			t.Fatalf("batch %d: %v", tc.batch, err)
		}
		for id := uint64(1); id <= n; id++ {
			if v, err := dst.Get(id); err != nil || string(v) != fmt.Sprint("new ", id) {
				t.Errorf("batch %d: Get(%d) = %q, %v", tc.batch, id, v, err)
			}
		}
		if ids, err := dst.Lookup("key-1"); err != nil || len(ids) != 14 || ids[0] != 1 || ids[13] != 40 {
			t.Errorf("batch %d: Lookup(key-1) = %v, %v", tc.batch, ids, err)
		}
		if ids, err := dst.Shape("shape-0"); err != nil || len(ids) != n/2 {
			t.Errorf("batch %d: Shape(shape-0) = %d ids, %v", tc.batch, len(ids), err)
		}
		if v, err := dst.Fixture("call_1"); err != nil || string(v) != `{"a":1}` {
			t.Errorf("batch %d: Fixture = %s, %v", tc.batch, v, err)
		}
		if m, err := dst.Meta(); err != nil || m.FormatVersion != store.FormatVersion || m.IndexRules != "rules" {
			t.Errorf("batch %d: Meta = %+v, %v", tc.batch, m, err)
		}
		// Appending after a copy continues the ids.
		if id, err := appendOne(dst, "k", "s", value("more")); err != nil || id != n+1 {
			t.Errorf("batch %d: append after the copy: id %d, %v; want %d", tc.batch, id, err, n+1)
		}
	}
}

// A copy that fails part way leaves a destination that opens as no
// cassette, never as a cassette with part of the interactions.
func TestCopyToFailedIsNoCassette(t *testing.T) {
	dir := t.TempDir()
	src := mustOpen(t, filepath.Join(dir, "src.cassette"), nil)
	for range 5 {
		if _, err := appendOne(src, "k", "s", value("v")); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "draft.cassette")
	dst, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err = src.CopyTo(dst, func(id uint64, old []byte) ([]byte, error) {
		if id == 3 {
			return nil, boom
		}
		return old, nil
	}, 1)
	if !errors.Is(err, boom) {
		t.Errorf("CopyTo = %v, want boom", err)
	}
	dst.Close()
	if _, err := store.Open(path, &store.Options{ReadOnly: true}); !errors.Is(err, store.ErrNotCassette) {
		t.Errorf("opening the half-copied file: %v, want ErrNotCassette", err)
	}
}
