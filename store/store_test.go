package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/llmproxy/llmproxy/store"
)

func mustOpen(t *testing.T, path string, opts *store.Options) *store.Store {
	t.Helper()
	s, err := store.Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// appendOne stores one interaction with AppendAll.
func appendOne(s *store.Store, key, shape string, encode func(uint64) ([]byte, error)) (uint64, error) {
	res, err := s.AppendAll([]store.Pending{{Key: key, Shape: shape, Encode: encode}})
	if err != nil {
		return 0, err
	}
	return res[0].ID, res[0].Err
}

func value(s string) func(uint64) ([]byte, error) {
	return func(id uint64) ([]byte, error) { return []byte(fmt.Sprintf("%d:%s", id, s)), nil }
}

func TestAppendLookupInOrder(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "c.cassette"), nil)
	for _, k := range []string{"a", "b", "a", "ab", "a"} {
		if _, err := appendOne(s, k, "shape-"+k[:1], value(k)); err != nil {
			t.Fatal(err)
		}
	}
	for key, want := range map[string]string{"a": "[1 3 5]", "b": "[2]", "ab": "[4]", "zz": "[]"} {
		ids, err := s.Lookup(key)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(ids); got != want {
			t.Errorf("Lookup(%q) = %s, want %s", key, got, want)
		}
	}
	ids, _ := s.Shape("shape-a")
	if got := fmt.Sprint(ids); got != "[1 3 4 5]" {
		t.Errorf("Shape(shape-a) = %s, want [1 3 4 5]", got)
	}
	v, err := s.Get(4)
	if err != nil || string(v) != "4:ab" {
		t.Errorf("Get(4) = %q, %v; want 4:ab", v, err)
	}
	if _, err := s.Get(9); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(9) error = %v, want ErrNotFound", err)
	}
	if n, _ := s.Len(); n != 5 {
		t.Errorf("Len = %d, want 5", n)
	}
}

func TestAppendEncodeErrorWritesNothing(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "c.cassette"), nil)
	boom := errors.New("boom")
	if _, err := appendOne(s, "k", "s", func(uint64) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("Append error = %v, want boom", err)
	}
	if n, _ := s.Len(); n != 0 {
		t.Errorf("Len after failed append = %d, want 0", n)
	}
	id, err := appendOne(s, "k", "s", value("x"))
	if err != nil || id != 1 {
		t.Errorf("next Append = %d, %v; want id 1", id, err)
	}
}

// TestAppendAll stores a batch in one transaction: consecutive ids in
// order, one failing encode left out without taking an id, every stored
// one indexed.
func TestAppendAll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.cassette")
	s := mustOpen(t, path, nil)
	if _, err := appendOne(s, "a", "s", value("first")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	res, err := s.AppendAll([]store.Pending{
		{Key: "b", Shape: "s", Encode: value("second")},
		{Key: "c", Shape: "s", Encode: func(uint64) ([]byte, error) { return nil, boom }},
		{Key: "a", Shape: "s", Encode: value("third")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].ID != 2 || res[0].Err != nil || res[2].ID != 3 || res[2].Err != nil {
		t.Errorf("stored ids %+v, want 2 and 3", res)
	}
	if res[1].ID != 0 || !errors.Is(res[1].Err, boom) || !strings.Contains(res[1].Err.Error(), path) {
		t.Errorf("failed encode gave %+v, want no id and an error naming %s wrapping boom", res[1], path)
	}
	for key, want := range map[string]string{"a": "[1 3]", "b": "[2]", "c": "[]"} {
		if ids, _ := s.Lookup(key); fmt.Sprint(ids) != want {
			t.Errorf("Lookup(%q) = %v, want %s", key, ids, want)
		}
	}
	if v, _ := s.Get(3); string(v) != "3:third" {
		t.Errorf("Get(3) = %q", v)
	}
	// A batch in which nothing encodes writes nothing, not even metadata.
	before, _ := s.Meta()
	res, err = s.AppendAll([]store.Pending{{Key: "d", Shape: "s", Encode: func(uint64) ([]byte, error) { return nil, boom }}})
	if err != nil || !errors.Is(res[0].Err, boom) {
		t.Fatalf("all-failing batch: %+v, %v", res, err)
	}
	if after, _ := s.Meta(); !after.Updated.Equal(before.Updated) {
		t.Error("an all-failing batch changed the metadata")
	}
	if id, _ := appendOne(s, "e", "s", value("fourth")); id != 4 {
		t.Errorf("next id %d, want 4", id)
	}
}

func TestSecondWriterFailsNamingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locked.cassette")
	mustOpen(t, path, nil)
	start := time.Now()
	_, err := store.Open(path, &store.Options{LockTimeout: 200 * time.Millisecond})
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second writer error = %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the file", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("second writer took %s to fail", d)
	}
}

func TestReadOnlyOpens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.cassette")
	w, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	appendOne(w, "k", "s", value("v"))
	w.Close()
	a := mustOpen(t, path, &store.Options{ReadOnly: true})
	b := mustOpen(t, path, &store.Options{ReadOnly: true})
	for _, s := range []*store.Store{a, b} {
		if ids, _ := s.Lookup("k"); len(ids) != 1 {
			t.Errorf("read-only Lookup = %v", ids)
		}
	}
	if _, err := appendOne(a, "k", "s", value("v")); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("Append on read-only = %v, want ErrReadOnly", err)
	}
	if _, err := store.Open(filepath.Join(t.TempDir(), "missing"), &store.Options{ReadOnly: true}); !errors.Is(err, store.ErrMissing) {
		t.Errorf("read-only open of a missing file = %v, want ErrMissing", err)
	}
}

func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	notBolt := filepath.Join(dir, "text.cassette")
	os.WriteFile(notBolt, []byte(strings.Repeat("this is not a bbolt file\n", 400)), 0o644)

	otherBolt := filepath.Join(dir, "other.db")
	db, _ := bolt.Open(otherBolt, 0o644, nil)
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("something")); return err })
	db.Close()

	newer := filepath.Join(dir, "newer.cassette")
	db, _ = bolt.Open(newer, 0o644, nil)
	db.Update(func(tx *bolt.Tx) error {
		b, _ := tx.CreateBucket([]byte("meta"))
		return b.Put([]byte("meta"), []byte(`{"format_version":99}`))
	})
	db.Close()

	corrupt := filepath.Join(dir, "corrupt.cassette")
	s, _ := store.Open(corrupt, nil)
	s.Close()
	data, _ := os.ReadFile(corrupt)
	for _, page := range []int{0, os.Getpagesize()} { // both meta pages
		for i := page + 16; i < page+80 && i < len(data); i++ {
			data[i] ^= 0xff
		}
	}
	os.WriteFile(corrupt, data, 0o644)

	for _, tc := range []struct {
		path string
		want error
	}{
		{notBolt, store.ErrNotCassette},
		{otherBolt, store.ErrNotCassette},
		{newer, store.ErrFormatVersion},
		{corrupt, store.ErrNotCassette},
	} {
		for _, ro := range []bool{false, true} {
			before, _ := os.ReadFile(tc.path)
			s, err := store.Open(tc.path, &store.Options{ReadOnly: ro, LockTimeout: time.Second})
			if err == nil {
				s.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("Open(%s, readonly=%v) = %v, want %v", filepath.Base(tc.path), ro, err, tc.want)
			} else if !strings.Contains(err.Error(), tc.path) {
				t.Errorf("error %q does not name the file", err)
			}
			after, _ := os.ReadFile(tc.path)
			if string(before) != string(after) {
				t.Errorf("Open(%s) changed the file", filepath.Base(tc.path))
			}
		}
	}
}

func TestReplaceIsWhole(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "c.cassette"), nil)
	appendOne(s, "old", "s", value("old"))
	meta, _ := s.Meta()
	meta.IndexRules = "rules-2"
	err := s.Replace(store.Contents{
		Records:  []store.Record{{ID: 1, Key: "x", Shape: "s", Value: []byte("one")}, {ID: 2, Key: "x", Shape: "s", Value: []byte("two")}},
		Fixtures: map[string][]byte{"call_weather": []byte(`{"value":1}`)},
		Meta:     meta,
	})
	if err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.Lookup("old"); len(ids) != 0 {
		t.Errorf("old key still indexed: %v", ids)
	}
	if ids, _ := s.Lookup("x"); fmt.Sprint(ids) != "[1 2]" {
		t.Errorf("Lookup(x) = %v", ids)
	}
	if fx, err := s.Fixture("call_weather"); err != nil || string(fx) != `{"value":1}` {
		t.Errorf("Fixture = %s, %v", fx, err)
	}
	if m, _ := s.Meta(); m.IndexRules != "rules-2" || m.FormatVersion != store.FormatVersion {
		t.Errorf("Meta = %+v", m)
	}
	if id, _ := appendOne(s, "y", "s", value("y")); id != 3 {
		t.Errorf("Append after Replace got id %d, want 3", id)
	}
	if err := s.Replace(store.Contents{Records: []store.Record{{ID: 5}}}); err == nil {
		t.Error("Replace with a gap in ids succeeded")
	}
}

func TestOpenWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.cassette")
	s, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	appendOne(s, "k", "s", value("v"))
	s.Close()
	before, _ := os.ReadFile(path)
	for _, ro := range []bool{false, true} {
		s, err := store.Open(path, &store.Options{ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		s.Lookup("k")
		s.Close()
		after, _ := os.ReadFile(path)
		if !bytes.Equal(before, after) {
			t.Errorf("Open(readonly=%v) and a lookup changed the file", ro)
		}
	}
}
