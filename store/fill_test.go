package store_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/store"
)

// TestFill writes a cassette in several batches and reads it back as a
// reader: every record, both indexes, the fixtures and the metadata, and
// the page walk at open accepts the file.
func TestFill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fill.cassette")
	s, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := appendOne(s, "old", "old", value("gone")); err != nil {
		t.Fatal(err)
	}
	f, err := s.Fill()
	if err != nil {
		t.Fatal(err)
	}
	const n = 2500
	big := bytes.Repeat([]byte("v"), 5000) // overflow pages
	id := uint64(1)
	for _, batch := range []int{1, 999, 0, 1500} {
		recs := make([]store.Record, batch)
		for k := range recs {
			recs[k] = store.Record{ID: id, Key: fmt.Sprintf("key-%d", id%7), Shape: fmt.Sprint("shape-", id%2), Value: append([]byte(fmt.Sprint(id, ":")), big[:id%5001]...)}
			id++
		}
		if err := f.Add(recs); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Add([]store.Record{{ID: 7, Key: "k", Shape: "s", Value: []byte("x")}}); err == nil || !strings.Contains(err.Error(), "want 2501") {
		t.Errorf("Add of id 7 after 2500: %v, want an error naming id 2501", err)
	}
	when := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	if err := f.Finish(map[string][]byte{"call_1": []byte(`{"a":1}`)}, store.Meta{Created: when, Updated: when, Version: "t", IndexRules: "rules"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	r := mustOpen(t, path, &store.Options{ReadOnly: true})
	if last, err := r.Last(); err != nil || last != n {
		t.Fatalf("Last: %d, %v; want %d", last, err, n)
	}
	for id := uint64(1); id <= n; id++ {
		v, err := r.Get(id)
		if err != nil || !bytes.HasPrefix(v, []byte(fmt.Sprint(id, ":"))) || len(v) != len(fmt.Sprint(id, ":"))+int(id%5001) {
			t.Fatalf("Get(%d): %d bytes, %v", id, len(v), err)
		}
	}
	ids, err := r.Lookup("key-3")
	if err != nil || len(ids) != (n+4)/7 || ids[0] != 3 || ids[1] != 10 {
		t.Errorf("Lookup(key-3): %d ids from %v, %v", len(ids), ids[:min(len(ids), 2)], err)
	}
	if ids, err := r.Lookup("old"); err != nil || len(ids) != 0 {
		t.Errorf("Lookup(old): %v, %v; the fill should have removed it", ids, err)
	}
	if ids, err := r.Shape("shape-0"); err != nil || len(ids) != n/2 {
		t.Errorf("Shape(shape-0): %d ids, %v", len(ids), err)
	}
	if v, err := r.Fixture("call_1"); err != nil || string(v) != `{"a":1}` {
		t.Errorf("Fixture: %s, %v", v, err)
	}
	m, err := r.Meta()
	if err != nil || m.FormatVersion != store.FormatVersion || m.IndexRules != "rules" || !m.Created.Equal(when) {
		t.Errorf("Meta: %+v, %v", m, err)
	}
}
