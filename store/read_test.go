package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/store"
)

// Read sees the index and the records in one transaction; a missing id is
// ErrNotFound. A page damaged after the open is ErrCorrupt from the Tx
// method that met it, never a panic: in a writable store, which reads
// values through the map, a page header; in a read-only store, which
// reads them with pread, a file cut short.
func TestRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.cassette")
	s, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	marker := []byte("MARKER-0123456789")
	value := append(bytes.Repeat([]byte{'v'}, 3000), marker...)
	if err := s.Replace(store.Contents{Records: []store.Record{{ID: 1, Key: "k", Shape: "s", Value: value}}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = store.Open(path, &store.Options{ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Read(func(tx *store.Tx) error {
		ids, err := tx.Lookup("k")
		if err != nil || len(ids) != 1 || ids[0] != 1 {
			t.Errorf("Lookup = %v, %v; want [1]", ids, err)
		}
		if v, err := tx.Get(1); err != nil || !bytes.Equal(v, value) {
			t.Errorf("Get(1): %d bytes, %v", len(v), err)
		}
		if _, err := tx.Get(2); !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "interaction 2") {
			t.Errorf("Get(2): %v, want ErrNotFound naming interaction 2", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.ValueTableBytes() <= 0 {
		t.Error("the read-only store reads its values through the map")
	}
	s.Close()

	// Another program writes the file behind the lock: the page holding the
	// record gets a page type bbolt does not know.
	if s, err = store.Open(path, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(raw, marker)
	if at < 0 {
		t.Fatal("record not found in the file")
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	page := int64(at / os.Getpagesize() * os.Getpagesize())
	if _, err := f.WriteAt([]byte{0xee, 0xee}, page+8); err != nil { // the page header's flags
		t.Fatal(err)
	}
	f.Close()
	err = s.Read(func(tx *store.Tx) error {
		_, err := tx.Get(1)
		return err
	})
	if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "interaction 1") || !strings.Contains(err.Error(), path) {
		t.Errorf("Get on a damaged page: %v, want ErrCorrupt naming the file and interaction 1", err)
	}
}

// A read-only store's Tx.Get reads a value with pread: a file cut short
// after the open (behind the lock) is an error naming the file and the
// interaction, wrapping ErrCorrupt, never a panic; a value before the cut
// still reads back.
func TestReadValueFileCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.cassette")
	s, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var recs []store.Record
	for id := uint64(1); id <= 40; id++ {
		recs = append(recs, store.Record{ID: id, Key: fmt.Sprint("k", id), Shape: "s", Value: bytes.Repeat([]byte{byte(id)}, 2000)})
	}
	if err := s.Replace(store.Contents{Records: recs}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = store.Open(path, &store.Options{ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.ValueTableBytes() <= 0 {
		t.Fatal("the read-only store reads its values through the map")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	last := bytes.LastIndex(raw, recs[39].Value)
	if last < 0 {
		t.Fatal("interaction 40 not found in the file")
	}
	if err := os.Truncate(path, int64(last+1000)); err != nil {
		t.Fatal(err)
	}
	err = s.Read(func(tx *store.Tx) error {
		_, err := tx.Get(40)
		return err
	})
	if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "interaction 40") || !strings.Contains(err.Error(), path) {
		t.Errorf("Get of a value cut short: %v, want ErrCorrupt naming the file and interaction 40", err)
	}
	if v, err := s.Get(1); err != nil || !bytes.Equal(v, recs[0].Value) {
		t.Errorf("Get(1) before the cut: %d bytes, %v", len(v), err)
	}
}

// Reads of a read-only store run at once, each seeing the records, and
// whatever a Read's fn did (returned an error, panicked), Close ends every
// transaction the Reads used and returns; a Read after Close is an error.
func TestReadOnlyReadsAtOnceThenClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.cassette")
	s, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var recs []store.Record
	for id := uint64(1); id <= 50; id++ {
		recs = append(recs, store.Record{ID: id, Key: fmt.Sprint("k", id), Shape: "s", Value: []byte(fmt.Sprint("value ", id))})
	}
	if err := s.Replace(store.Contents{Records: recs}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = store.Open(path, &store.Options{ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	errFn := errors.New("fn failed")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for n := range 200 {
				id := uint64((g*200+n)%50 + 1)
				err := s.Read(func(tx *store.Tx) error {
					ids, err := tx.Lookup(fmt.Sprint("k", id))
					if err != nil || len(ids) != 1 || ids[0] != id {
						return fmt.Errorf("Lookup(k%d) = %v, %v", id, ids, err)
					}
					v, err := tx.Get(id)
					if err != nil || string(v) != fmt.Sprint("value ", id) {
						return fmt.Errorf("Get(%d) = %q, %v", id, v, err)
					}
					if n%50 == 7 {
						return errFn
					}
					return nil
				})
				if err != nil && (n%50 != 7 || !errors.Is(err, errFn)) {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	func() {
		defer func() { _ = recover() }()
		_ = s.Read(func(*store.Tx) error { panic("fn panicked") })
	}()
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return: a read transaction was left open")
	}
	if err := s.Read(func(*store.Tx) error { return nil }); err == nil {
		t.Error("Read after Close: no error")
	}
}
