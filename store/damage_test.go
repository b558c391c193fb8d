package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/store"
)

// damagedCase is one way of damaging a good cassette file.
type damagedCase struct {
	name   string
	damage func(good []byte) []byte
}

// damagedCases damages every page of a file in two ways, flips bytes at
// random (fixed seed) and truncates it.
func damagedCases(size, flips int) []damagedCase {
	page := os.Getpagesize()
	var cases []damagedCase
	for p := 0; p*page < size; p++ {
		lo, hi := p*page, min((p+1)*page, size)
		cases = append(cases,
			damagedCase{fmt.Sprintf("page %d zeroed", p), func(b []byte) []byte {
				clear(b[lo:hi])
				return b
			}},
			damagedCase{fmt.Sprintf("page %d random", p), func(b []byte) []byte {
				r := rand.New(rand.NewPCG(uint64(p), 7))
				for i := lo; i < hi; i++ {
					b[i] = byte(r.Uint32())
				}
				return b
			}},
		)
	}
	for k := range flips {
		cases = append(cases, damagedCase{fmt.Sprintf("flip %d", k), func(b []byte) []byte {
			r := rand.New(rand.NewPCG(uint64(k), 11))
			for range 4 {
				b[r.IntN(len(b))] ^= byte(1 + r.IntN(255))
			}
			return b
		}})
	}
	for _, n := range []int{0, 100, page, 2*page + 1, size / 2, size - 1} {
		cases = append(cases, damagedCase{fmt.Sprintf("truncated to %d bytes", n), func(b []byte) []byte { return b[:n] }})
	}
	return cases
}

// goodCassette writes a cassette of n interactions, some of them larger
// than a page so that the file holds overflow pages, and returns its bytes.
func goodCassette(t *testing.T, n int) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "good.cassette")
	s, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		v := fmt.Sprintf(`{"n":%d,"pad":%q}`, i, strings.Repeat("x", i*300))
		if _, err := appendOne(s, fmt.Sprint("key", i%7), "shape", func(uint64) ([]byte, error) { return []byte(v), nil }); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// useStore does what llmproxy does with a cassette: a reader reads every
// interaction (through the map, and by id: with pread in a reader), fixture
// and index entry; a writer also appends.
func useStore(path string, readOnly bool) error {
	s, err := store.Open(path, &store.Options{ReadOnly: readOnly, LockTimeout: time.Second})
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.Meta(); err != nil {
		return err
	}
	if err := s.ForEach(func(uint64, []byte) error { return nil }); err != nil {
		return err
	}
	if err := s.Fixtures(func(string, []byte) error { return nil }); err != nil {
		return err
	}
	for k := range 7 {
		if _, err := s.Lookup(fmt.Sprint("key", k)); err != nil {
			return err
		}
	}
	if _, err := s.Shape("shape"); err != nil {
		return err
	}
	for id := uint64(0); id <= 26; id++ {
		if _, err := s.Get(id); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	if !readOnly {
		if _, err := appendOne(s, "new", "shape", func(uint64) ([]byte, error) { return []byte("new"), nil }); err != nil {
			return err
		}
	}
	return nil
}

// TestDamagedFiles opens damaged copies of a cassette, read-only and for
// writing, and uses them. No damage may crash or hang the process; every
// error names the file; a damaged file that a writer refuses is left as it
// was. Damage inside a value's bytes is not the store's to see (values are
// opaque; the cassette layer rejects what does not decode).
func TestDamagedFiles(t *testing.T) {
	good := goodCassette(t, 24)
	cases := damagedCases(len(good), 100)
	dir := t.TempDir()
	outcomes := map[string]int{}
	for _, tc := range cases {
		bad := tc.damage(bytes.Clone(good))
		for _, ro := range []bool{true, false} {
			path := filepath.Join(dir, "damaged.cassette")
			if err := os.WriteFile(path, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- useStore(path, ro) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s (read-only %v): still running after 10 s", tc.name, ro)
			}
			mode := map[bool]string{true: "reader", false: "writer"}[ro]
			switch {
			case err == nil:
				outcomes[mode+" ok"]++
			case errors.Is(err, store.ErrNotCassette):
				outcomes[mode+" not a cassette"]++
			case errors.Is(err, store.ErrCorrupt):
				outcomes[mode+" damaged"]++
			default:
				outcomes[mode+" other error"]++
				t.Errorf("%s (%s): error %v wraps neither ErrNotCassette nor ErrCorrupt", tc.name, mode, err)
			}
			if err != nil && !strings.Contains(err.Error(), path) {
				t.Errorf("%s (%s): error %q does not name the file", tc.name, mode, err)
			}
			if err != nil {
				after, _ := os.ReadFile(path)
				if !bytes.Equal(after, bad) {
					t.Errorf("%s (%s): refused with %v, yet the file changed", tc.name, mode, err)
				}
			}
		}
	}
	t.Logf("damaged files tried: %d (each by a reader and a writer); outcomes: %v", len(cases), outcomes)
	if outcomes["writer damaged"] == 0 || outcomes["reader damaged"] == 0 {
		t.Errorf("no damage was detected as ErrCorrupt: %v", outcomes)
	}
}
