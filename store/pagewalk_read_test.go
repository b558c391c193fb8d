package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPageWalkReadsBoundedly checks what the walk reads, not how long it
// takes: its buffers never exceed maxRunBytes however large the file, and
// the overflow pages of large values are not read, so a file of large
// values costs far less than its size.
func TestPageWalkReadsBoundedly(t *testing.T) {
	page := os.Getpagesize()
	for _, tc := range []struct {
		name      string
		n, size   int
		maxFactor float64 // of the file's size, at most
	}{
		{"many small values", 4000, 1024, 1.0},
		{"large values", 60, 16 * page, 0.25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.cassette")
			s, err := Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			recs := make([]Record, tc.n)
			for i := range recs {
				recs[i] = Record{ID: uint64(i + 1), Key: fmt.Sprintf("key-%06d", i), Shape: "shape", Value: bytes.Repeat([]byte{'v'}, tc.size)}
			}
			if err := s.Replace(Contents{Records: recs}); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, err := f.Stat()
			if err != nil {
				t.Fatal(err)
			}
			w := &walker{f: f, size: st.Size()}
			if err := w.walk(); err != nil {
				t.Fatal(err)
			}
			if st.Size() <= maxRunBytes && tc.maxFactor == 1.0 {
				t.Fatalf("the file (%d bytes) is no larger than one read buffer", st.Size())
			}
			if w.stats.largest > maxRunBytes {
				t.Errorf("largest read %d bytes, more than %d", w.stats.largest, maxRunBytes)
			}
			if limit := int64(tc.maxFactor * float64(st.Size())); w.stats.bytes > limit {
				t.Errorf("read %d bytes of a %d-byte file, more than %d", w.stats.bytes, st.Size(), limit)
			}
			t.Logf("file %d bytes; read %d bytes, largest read %d", st.Size(), w.stats.bytes, w.stats.largest)
		})
	}
}

// A table of value places is indexed by id: ids too sparse for that get no
// table (their values are read through the map), and an id with no place
// is not found.
func TestValueTable(t *testing.T) {
	if tab := newValueTable(nil); tab != nil {
		t.Error("a table for no values")
	}
	if tab := newValueTable([]valuePlace{{id: 1, off: 4096, n: 3}, {id: 1 << 40, off: 8192, n: 3}}); tab != nil {
		t.Error("a table for ids 1 and 1<<40")
	}
	tab := newValueTable([]valuePlace{{id: 3, off: 8192, n: 7}, {id: 1, off: 4096, n: 0}})
	if tab == nil {
		t.Fatal("no table for ids 1 and 3")
	}
	for _, c := range []struct {
		id  uint64
		off int64
		n   uint32
		ok  bool
	}{{0, 0, 0, false}, {1, 4096, 0, true}, {2, 0, 0, false}, {3, 8192, 7, true}, {4, 0, 0, false}, {1 << 63, 0, 0, false}} {
		if off, n, ok := tab.at(c.id); off != c.off || n != c.n || ok != c.ok {
			t.Errorf("at(%d) = %d, %d, %v; want %d, %d, %v", c.id, off, n, ok, c.off, c.n, c.ok)
		}
	}
}

// TestPageWalkFileCutShort: a file cut short after the walk learnt its size
// (behind the lock, by a process that ignores it) is ErrCorrupt, not a
// short read taken for pages.
func TestPageWalkFileCutShort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.cassette")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]Record, 200)
	for i := range recs {
		recs[i] = Record{ID: uint64(i + 1), Key: fmt.Sprintf("key-%06d", i), Shape: "shape", Value: bytes.Repeat([]byte{'v'}, 3000)}
	}
	if err := s.Replace(Contents{Records: recs}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(st.Size() / 4); err != nil {
		t.Fatal(err)
	}
	w := &walker{f: f, size: st.Size()}
	if err := w.walk(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "did the file change") {
		t.Errorf("walk of a file cut from %d to %d bytes: %v, want ErrCorrupt saying the file changed", st.Size(), st.Size()/4, err)
	}
}
