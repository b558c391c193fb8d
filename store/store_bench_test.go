package store_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/llmproxy/llmproxy/store"
)

// benchKey is a match key like the matcher's: a hex sha256.
func benchKey(i int) string {
	sum := sha256.Sum256([]byte(strconv.Itoa(i)))
	return hex.EncodeToString(sum[:])
}

// benchStore is a cassette of n records of 2 KB, written with Replace.
func benchStore(b *testing.B, n int) *store.Store {
	b.Helper()
	s, err := store.Open(filepath.Join(b.TempDir(), "bench.cassette"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	value := make([]byte, 2048)
	recs := make([]store.Record, n)
	for i := range recs {
		recs[i] = store.Record{ID: uint64(i + 1), Key: benchKey(i), Shape: "POST openai /v1/chat/completions", Value: value}
	}
	if err := s.Replace(store.Contents{Records: recs}); err != nil {
		b.Fatal(err)
	}
	return s
}

var benchSizes = []int{10, 1_000, 100_000}

// BenchmarkLookup is an exact match-key lookup, spread over the whole
// index: its cost must not grow with the cassette.
func BenchmarkLookup(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := benchStore(b, n)
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
	}
}

// BenchmarkGet reads a 2 KB interaction by id.
func BenchmarkGet(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := benchStore(b, n)
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
	for _, n := range []int{10_000, 100_000} {
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
