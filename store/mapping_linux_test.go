package store_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/store"
)

// mappedRSS is the resident size, in bytes, of this process's maps of the
// file at path, from /proc/self/smaps.
func mappedRSS(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	var total int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = len(fields) >= 6 && fields[len(fields)-1] == path
			continue
		}
		if in && len(fields) == 3 && fields[0] == "Rss:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			total += kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}

// TestResidentLimit reads every interaction of a cassette of 16 MB from a
// read-only store. Get and Read's Tx.Get read values with pread, so what
// stays mapped in the process is the rest of the file at most (here its
// index, well under 1 MB), with a limit or none. ForEach reads them
// through the map: with a limit of 2 MB, what stays mapped stays near the
// limit; with no limit, it is most of the file (which shows that the
// measure sees what it should). It measures memory, not time.
func TestResidentLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.cassette")
	path, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(path, "c.cassette")
	const n, size = 500, 32 << 10
	value := func(id uint64) []byte { return bytes.Repeat([]byte{byte(id - 1)}, size) }
	writeRecords(t, path, n, value)
	const limit = 2 << 20
	for _, tc := range []struct {
		name    string
		limit   int64
		how     string // "get", "read" (one transaction per interaction, as replay does) or "foreach"
		atMost  int64
		atLeast int64
	}{
		{"limit of 2 MB, Get", limit, "get", 1 << 20, 0},
		{"no limit, Get", -1, "get", 1 << 20, 0},
		{"no limit, through Read", -1, "read", 1 << 20, 0},
		{"limit of 2 MB, ForEach", limit, "foreach", 2*limit + 1<<20, 0},
		{"no limit, ForEach", -1, "foreach", 1 << 40, n * size / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := store.Open(path, &store.Options{ReadOnly: true, ResidentLimit: tc.limit})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.ValueTableBytes() <= 0 {
				t.Fatal("the store reads its values through the map")
			}
			if tc.how == "foreach" {
				err := s.ForEach(func(id uint64, v []byte) error {
					if len(v) != size || v[0] != byte(id-1) {
						return fmt.Errorf("interaction %d: %d bytes", id, len(v))
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			for id := uint64(1); id <= n && tc.how != "foreach"; id++ {
				if tc.how == "read" {
					err := s.Read(func(tx *store.Tx) error {
						if _, err := tx.Lookup(fmt.Sprint("key", id-1)); err != nil {
							return err
						}
						v, err := tx.Get(id)
						if err == nil && (len(v) != size || v[0] != byte(id-1)) {
							err = fmt.Errorf("%d bytes", len(v))
						}
						return err
					})
					if err != nil {
						t.Fatalf("Read of interaction %d: %v", id, err)
					}
					continue
				}
				v, err := s.Get(id)
				if err != nil || len(v) != size || v[0] != byte(id-1) {
					t.Fatalf("Get(%d): %d bytes, %v", id, len(v), err)
				}
				if _, err := s.Lookup(fmt.Sprint("key", id-1)); err != nil {
					t.Fatal(err)
				}
			}
			rss := mappedRSS(t, path)
			t.Logf("after reading %d MB: %.1f MB of the file mapped in the process", n*size>>20, float64(rss)/(1<<20))
			if rss > tc.atMost {
				t.Errorf("%d bytes of the file stay mapped, more than %d", rss, tc.atMost)
			}
			if rss < tc.atLeast {
				t.Errorf("%d bytes of the file stay mapped, fewer than %d: the measure does not see the reads", rss, tc.atLeast)
			}
			// Every value reads back whole after the drops.
			for id := uint64(1); id <= n; id += 37 {
				if v, err := s.Get(id); err != nil || !bytes.Equal(v, value(id)) {
					t.Fatalf("Get(%d) after the drops: %v", id, err)
				}
			}
		})
	}
}

// TestResidentLimitConcurrentReads drops the map's pages often while
// readers read from it at once, then closes the store: every value reads
// back whole (run it under -race).
func TestResidentLimitConcurrentReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.cassette")
	const n, size = 200, 9 << 10
	value := func(id uint64) []byte { return bytes.Repeat([]byte{byte(id)}, size) }
	writeRecords(t, path, n, value)
	s, err := store.Open(path, &store.Options{ReadOnly: true, ResidentLimit: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			for k := range 3 * n {
				id := uint64((k*7+g)%n + 1)
				v, err := s.Get(id)
				if err == nil && !bytes.Equal(v, value(id)) {
					err = fmt.Errorf("interaction %d read back wrong", id)
				}
				if err == nil {
					err = s.ForEach(func(id uint64, v []byte) error {
						if id%50 == 0 && !bytes.Equal(v, value(id)) {
							return fmt.Errorf("interaction %d read back wrong in ForEach", id)
						}
						return nil
					})
				}
				if err != nil {
					errs <- err
					return
				}
				if k == n {
					break
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if s.ResidentDrops() == 0 {
		t.Error("the map's pages were never dropped")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestResidentLimitSmallFile: a file no larger than a few times the limit
// stays mapped whole, however much is read from it; a larger one is
// dropped as the reads pass the limit.
func TestResidentLimitSmallFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.cassette")
	const n, size = 100, 9 << 10 // about 1.2 MB with the pages' slack
	writeRecords(t, path, n, func(id uint64) []byte { return bytes.Repeat([]byte{byte(id - 1)}, size) })
	for _, tc := range []struct {
		limit int64
		drops bool
	}{{1 << 20, false}, {64 << 10, true}} {
		s, err := store.Open(path, &store.Options{ReadOnly: true, ResidentLimit: tc.limit})
		if err != nil {
			t.Fatal(err)
		}
		for range 20 { // 18 MB of reads through the map
			err := s.ForEach(func(id uint64, v []byte) error {
				if len(v) != size {
					return fmt.Errorf("interaction %d: %d bytes", id, len(v))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if got := s.ResidentDrops() > 0; got != tc.drops {
			t.Errorf("limit %d: %d drops, want drops %v", tc.limit, s.ResidentDrops(), tc.drops)
		}
		s.Close()
	}
}

// TestPageWalkLeavesNothingMapped: the page walk at open reads a file of
// many read buffers without mapping it, and leaves none of the file mapped
// when it returns.
func TestPageWalkLeavesNothingMapped(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "c.cassette")
	const n, size = 3000, 12 << 10 // about 40 MB
	writeRecords(t, path, n, func(id uint64) []byte { return bytes.Repeat([]byte{byte(id - 1)}, size) })
	if err := store.WalkPages(path); err != nil {
		t.Fatal(err)
	}
	if rss := mappedRSS(t, path); rss != 0 {
		t.Errorf("%d bytes of the file stay mapped after the walk", rss)
	}
}

// writeRecords writes a cassette at path of n interactions, ids 1 to n,
// each under its own key, with value(id) as its record.
func writeRecords(t *testing.T, path string, n int, value func(id uint64) []byte) {
	t.Helper()
	s, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]store.Record, n)
	for i := range recs {
		id := uint64(i + 1)
		recs[i] = store.Record{ID: id, Key: fmt.Sprint("key", i), Shape: "shape", Value: value(id)}
	}
	if err := s.Replace(store.Contents{Records: recs}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
