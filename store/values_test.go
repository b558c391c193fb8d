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

	"github.com/llmproxy/llmproxy/store"
)

// valueCassette writes a cassette in a new file and returns its path.
type valueCassette struct {
	name  string
	write func(t *testing.T, path string)
	// inline: the interactions bucket is small enough for bbolt to keep
	// it inside its parent's page.
	inline bool
}

// sized is the value of interaction id: n bytes that name it.
func sized(id uint64, n int) []byte {
	v := bytes.Repeat([]byte{byte(id), byte(id >> 8)}, n/2+1)[:n]
	return append([]byte(fmt.Sprintf("%d:", id)), v...)
}

func replaced(sizes func(i int) int, n int) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		s := mustOpen(t, path, nil)
		recs := make([]store.Record, n)
		for i := range recs {
			id := uint64(i + 1)
			recs[i] = store.Record{ID: id, Key: fmt.Sprint("key", i%13), Shape: "shape", Value: sized(id, sizes(i))}
		}
		if err := s.Replace(store.Contents{Records: recs}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGetByPread: a read-only store reads every value with pread from the
// places the walk at open found, and each is exactly the bytes bbolt's map
// holds (ForEach reads through the map), for cassettes written in one
// transaction or appended one by one (pages reused out of order), with
// small values, values spilling into overflow pages, an inline
// interactions bucket, and a cassette written by the format-1 code. An id
// with no interaction is ErrNotFound.
func TestGetByPread(t *testing.T) {
	page := os.Getpagesize()
	cases := []valueCassette{
		{name: "small values", write: replaced(func(i int) int { return 10 + i*7%500 }, 400)},
		{name: "overflow values", write: replaced(func(i int) int { return []int{page - 40, page, 3*page + 5, 40_000, 7}[i%5] }, 60)},
		{name: "one tiny value", write: replaced(func(int) int { return 20 }, 1), inline: true},
		{name: "appended one by one", write: func(t *testing.T, path string) {
			s := mustOpen(t, path, nil)
			for i := range 90 {
				n := []int{30, 2 * page, 900, 5 * page}[i%4]
				if _, err := appendOne(s, fmt.Sprint("key", i%5), "shape", func(id uint64) ([]byte, error) { return sized(id, n), nil }); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "format 1", write: func(t *testing.T, path string) {
			b, err := os.ReadFile(filepath.Join("..", "cassette", "testdata", "v1.cassette"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.cassette")
			tc.write(t, path)
			s := mustOpen(t, path, &store.Options{ReadOnly: true})
			if s.ValueTableBytes() <= 0 {
				t.Fatal("the read-only store reads its values through the map")
			}
			if got := s.ValuePageBytes(); (got == 0) != tc.inline {
				t.Errorf("the interactions bucket's pages take %d bytes; inline %v", got, tc.inline)
			}
			mapped := map[uint64][]byte{}
			err := s.ForEach(func(id uint64, v []byte) error {
				mapped[id] = bytes.Clone(v)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			last, err := s.Last()
			if err != nil || last == 0 || len(mapped) != int(last) {
				t.Fatalf("Last = %d, %v; ForEach saw %d interactions", last, err, len(mapped))
			}
			err = s.Read(func(tx *store.Tx) error {
				got := map[uint64][]byte{} // every value of one Read stays valid until it returns
				for id := uint64(1); id <= last; id++ {
					v, err := tx.Get(id)
					if err != nil {
						return err
					}
					got[id] = v
				}
				for id, v := range got {
					if !bytes.Equal(v, mapped[id]) {
						t.Errorf("interaction %d: pread read %d bytes %.20q, the map holds %d bytes %.20q", id, len(v), v, len(mapped[id]), mapped[id])
					}
				}
				for _, id := range []uint64{0, last + 1, last + 5000, 1 << 63} {
					if _, err := tx.Get(id); !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), fmt.Sprint("interaction ", id)) {
						t.Errorf("Get(%d): %v, want ErrNotFound naming it", id, err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if v, err := s.Get(last); err != nil || !bytes.Equal(v, mapped[last]) {
				t.Errorf("Store.Get(%d): %d bytes, %v", last, len(v), err)
			}
			if _, err := s.Get(last + 1); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Store.Get(%d): %v, want ErrNotFound", last+1, err)
			}
		})
	}
}

// A writable store, and a read-only store of a cassette with no
// interactions, read through the map: they have no table of places.
func TestGetByPreadOnlyReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.cassette")
	s := mustOpen(t, path, nil)
	if s.ValueTableBytes() != -1 {
		t.Error("an empty writable store has a table of places")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s = mustOpen(t, path, &store.Options{ReadOnly: true}); s.ValueTableBytes() != -1 {
		t.Error("an empty read-only store has a table of places")
	}
	if _, err := s.Get(1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(1) of an empty cassette: %v, want ErrNotFound", err)
	}
	s.Close()
	replaced(func(int) int { return 100 }, 10)(t, path)
	if s = mustOpen(t, path, nil); s.ValueTableBytes() != -1 {
		t.Error("a writable store has a table of places")
	}
}

// Close while Reads run: each Read returns the right bytes or an error,
// none panics, and Close returns once they end (run it under -race).
func TestGetByPreadCloseWhileReading(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.cassette")
	replaced(func(i int) int { return 100 + i*37%9000 }, 200)(t, path)
	s, err := store.Open(path, &store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	started := make(chan struct{}, 4)
	for g := range 4 {
		wg.Go(func() {
			for k := 0; ; k++ {
				id := uint64((k*7+g)%200 + 1)
				err := s.Read(func(tx *store.Tx) error {
					v, err := tx.Get(id)
					if err == nil && !bytes.HasPrefix(v, []byte(fmt.Sprintf("%d:", id))) {
						t.Errorf("interaction %d read back as %.20q", id, v)
					}
					return err
				})
				if k == 10 {
					started <- struct{}{}
				}
				if err != nil {
					if k < 10 {
						started <- struct{}{}
					}
					return
				}
			}
		})
	}
	for range 4 {
		<-started
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}
