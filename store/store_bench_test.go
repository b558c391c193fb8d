package store_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/store"
)

// benchKey is a match key like the matcher's: a hex sha256.
func benchKey(i int) string {
	sum := sha256.Sum256([]byte(strconv.Itoa(i)))
	return hex.EncodeToString(sum[:])
}

// benchStore is a cassette of n records of 1 KB, written with Replace in
// dir.
func benchStore(b *testing.B, dir string, n int) *store.Store {
	b.Helper()
	s, err := store.Open(filepath.Join(dir, fmt.Sprintf("bench-%d.cassette", n)), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	value := make([]byte, 1024)
	recs := make([]store.Record, n)
	for i := range recs {
		recs[i] = store.Record{ID: uint64(i + 1), Key: benchKey(i), Shape: "POST openai /v1/chat/completions", Value: value}
	}
	if err := s.Replace(store.Contents{Records: recs}); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkRead is an exact match-key lookup, and the read of a record by
// id, spread over the whole cassette: their cost must not grow with it.
// (The first touch of a page of the memory-mapped file is a page fault, so
// a short run at 100 000 records costs more than a long one.)
func BenchmarkRead(b *testing.B) {
	dir := b.TempDir()
	for _, n := range []int{10, 1_000, 100_000} {
		s := benchStore(b, dir, n)
		b.Run(fmt.Sprintf("Lookup/%d", n), func(b *testing.B) {
			keys := make([]string, min(n, 4096))
			for i := range keys {
				keys[i] = benchKey(i * 7919 % n)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				ids, err := s.Lookup(keys[i%len(keys)])
				if err != nil || len(ids) != 1 {
					b.Fatalf("Lookup: %v, %v", ids, err)
				}
				i++
			}
		})
		b.Run(fmt.Sprintf("Get/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := s.Get(uint64(i*7919%n + 1)); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkReplace writes a whole cassette of small records in one
// transaction, as scrub, import and the bench's cassette builder do. Its
// cost must grow with the records, not with their square.
func BenchmarkReplace(b *testing.B) {
	for _, n := range []int{1_000, 4_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			recs := make([]store.Record, n)
			value := make([]byte, 256)
			for i := range recs {
				recs[i] = store.Record{ID: uint64(i + 1), Key: benchKey(i), Shape: "POST openai /v1/chat/completions", Value: value}
			}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				s, err := store.Open(filepath.Join(b.TempDir(), "replace.cassette"), nil)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := s.Replace(store.Contents{Records: recs}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkOpen opens two large cassettes — 100 000 records of 1 KB
// (about 240 MB), and 2 000 records of 64 KB (about 130 MB, most of it
// overflow pages) — as a reader and as a writer, with the page walk that
// runs before bbolt reads the file (the whole of the check at open) and
// without it, and times the walk alone. The walk's cost is the difference
// between the two Opens.
func BenchmarkOpen(b *testing.B) {
	dir := b.TempDir()
	small := benchStore(b, dir, 100_000)
	big, err := store.Open(filepath.Join(dir, "bench-big.cassette"), nil)
	if err != nil {
		b.Fatal(err)
	}
	recs := make([]store.Record, 2_000)
	value := make([]byte, 64<<10)
	for i := range recs {
		recs[i] = store.Record{ID: uint64(i + 1), Key: benchKey(i), Shape: "POST openai /v1/chat/completions", Value: value}
	}
	if err := big.Replace(store.Contents{Records: recs}); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		s    *store.Store
	}{{"100000x1KB", small}, {"2000x64KB", big}} {
		path := c.s.Path()
		if err := c.s.Close(); err != nil {
			b.Fatal(err)
		}
		if st, err := os.Stat(path); err == nil {
			b.Logf("%s: %d MB", c.name, st.Size()>>20)
		}
		for _, ro := range []bool{true, false} {
			mode := map[bool]string{true: "reader", false: "writer"}[ro]
			for _, walk := range []bool{true, false} {
				b.Run(fmt.Sprintf("%s/%s/walk=%v", c.name, mode, walk), func(b *testing.B) {
					defer store.SetPageWalkForBenchmark(walk)()
					for b.Loop() {
						s, err := store.Open(path, &store.Options{ReadOnly: ro})
						if err != nil {
							b.Fatal(err)
						}
						s.Close()
					}
				})
			}
		}
		b.Run(c.name+"/walk alone", func(b *testing.B) {
			for b.Loop() {
				if err := store.WalkPages(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOpenCassette opens the cassette LLMPROXY_BENCH_CASSETTE names
// read-only, as replay does (the page walk included), and closes it; it
// reports the process's CPU time per open beside the wall time. Without
// the variable it is skipped.
func BenchmarkOpenCassette(b *testing.B) {
	path := os.Getenv("LLMPROXY_BENCH_CASSETTE")
	if path == "" {
		b.Skip("LLMPROXY_BENCH_CASSETTE names no cassette")
	}
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	for b.Loop() {
		s, err := store.Open(path, &store.Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := func(ru syscall.Rusage) time.Duration { return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()) }
	b.ReportMetric(float64((cpu(after)-cpu(before)).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(procStatus(b, "VmHWM:"))/(1<<20), "peak-MB")
}

// BenchmarkReadCassette reads a large cassette as replay does — in one
// read transaction, a match-key lookup and the read of an interaction,
// both at random — and reports the process's RSS after the reads and its
// peak. The cassette is the file LLMPROXY_BENCH_CASSETTE names (one built
// by `llmproxy import` outside the repository, such as the bench's
// 100 000-interaction scale cassette); without it the benchmark is skipped.
func BenchmarkReadCassette(b *testing.B) {
	path := os.Getenv("LLMPROXY_BENCH_CASSETTE")
	if path == "" {
		b.Skip("LLMPROXY_BENCH_CASSETTE names no cassette")
	}
	s, err := store.Open(path, &store.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	n, err := s.Last()
	if err != nil || n == 0 {
		b.Fatalf("Last: %d, %v", n, err)
	}
	keys := make([]string, 4096)
	for i := range keys {
		keys[i] = benchKey(i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var bytes int64
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		id := rng.Uint64N(n) + 1
		err := s.Read(func(tx *store.Tx) error {
			if _, err := tx.Lookup(keys[i%len(keys)]); err != nil {
				return err
			}
			v, err := tx.Get(id)
			bytes += int64(len(v))
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(bytes)/float64(b.N), "B/value")
	rss, peak := procStatus(b, "VmRSS:"), procStatus(b, "VmHWM:")
	b.ReportMetric(float64(rss)/(1<<20), "RSS-MB")
	b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
}

// procStatus is a size, in bytes, from /proc/self/status (0 where there is
// none).
func procStatus(b *testing.B, field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 3 && fields[0] == field {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	return 0
}
