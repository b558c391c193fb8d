package cassette

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/store"
	bolt "go.etcd.io/bbolt"
)

// BenchmarkMigrate migrates a format-1 cassette of 20 000 interactions
// (2 KB answers, 80 MB) and reports the peak heap it took above what was
// live before: "one-transaction" writes the copy in one transaction, as
// Migrate did before it wrote in batches, and "batched" in transactions
// of store.CopyBatch; "first-append" is the append that upgrades it.
func BenchmarkMigrate(b *testing.B) {
	const n = 20_000
	dir := b.TempDir()
	v1 := filepath.Join(dir, "v1.cassette")
	writeV1(b, v1, n)
	st, err := os.Stat(v1)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name  string
		batch int64
	}{{"one-transaction", 1 << 62}, {"batched", 0}} {
		b.Run(mode.name, func(b *testing.B) {
			var peak uint64
			for b.Loop() {
				b.StopTimer()
				path := filepath.Join(dir, "c.cassette")
				copyFile(b, v1, path)
				runtime.GC()
				stop := sampleHeap()
				b.StartTimer()
				if _, err := migrate(path, Options{}, upgrade, mode.batch); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				peak = max(peak, stop())
				if v, _ := formatOf(b, path); v != store.FormatVersion {
					b.Fatalf("migrated cassette is format %d", v)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(st.Size())/(1<<20), "file-MB")
		})
	}
	b.Run("first-append", func(b *testing.B) {
		var peak uint64
		add := &Interaction{Upstream: "openai", Kind: "generic", Request: Request{Method: "GET", Path: "/new"}, Response: Response{Status: 200, Body: Body("new")}}
		for b.Loop() {
			b.StopTimer()
			path := filepath.Join(dir, "c.cassette")
			copyFile(b, v1, path)
			c, err := Open(path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			stop := sampleHeap()
			b.StartTimer()
			res, err := c.AppendAll([]Keyed{{Interaction: add, Key: "k", Shape: "s"}})
			if err != nil || res[0].ID != n+1 {
				b.Fatalf("AppendAll = %+v, %v", res, err)
			}
			b.StopTimer()
			peak = max(peak, stop())
			if err := c.Close(); err != nil {
				b.Fatal(err)
			}
			if v, _ := formatOf(b, path); v != store.FormatVersion {
				b.Fatalf("appended cassette is format %d", v)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	})
}

// writeV1 writes a format-1 cassette of n copies of the 2 KB JSON answer
// at path: format-1 records, stamped format version 1.
func writeV1(tb testing.TB, path string, n int) {
	tb.Helper()
	s, err := store.Open(path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	f, err := s.Fill()
	if err != nil {
		tb.Fatal(err)
	}
	in := benchShapes()["json"]
	for first := 1; first <= n; first += 1000 {
		var recs []store.Record
		for id := first; id < first+1000 && id <= n; id++ {
			in.ID = uint64(id)
			in.Request.Path = fmt.Sprint("/v1/chat/completions/", id)
			v, err := encodeV1(in)
			if err != nil {
				tb.Fatal(err)
			}
			recs = append(recs, store.Record{ID: uint64(id), Key: fmt.Sprint("key-", id), Shape: "shape", Value: v})
		}
		if err := f.Add(recs); err != nil {
			tb.Fatal(err)
		}
	}
	if err := f.Finish(nil, store.Meta{Version: "v1"}); err != nil {
		tb.Fatal(err)
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	db, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("meta"))
		m := strings.Replace(string(b.Get([]byte("meta"))), fmt.Sprintf(`"format_version":%d`, store.FormatVersion), `"format_version":1`, 1)
		return b.Put([]byte("meta"), []byte(m))
	})
	if err != nil {
		tb.Fatal(err)
	}
}

func copyFile(tb testing.TB, from, to string) {
	tb.Helper()
	r, err := os.Open(from)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	w, err := os.Create(to)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(w, r); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}

// sampleHeap samples the bytes of heap objects, live or not yet swept,
// every half millisecond until the function it returns is called, which
// returns their peak above the first sample.
func sampleHeap() func() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(s); return s[0].Value.Uint64() }
	base := read()
	var (
		peak uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(500 * time.Microsecond)
		defer t.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		if peak < base {
			return 0
		}
		return peak - base
	}
}
