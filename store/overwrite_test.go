package store_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/store"
)

// TestOverwrite opens a cassette with Options.Overwrite: the old contents
// stay readable until the first interaction is stored, which replaces them
// in its own transaction; a store closed before that (or whose appends all
// fail) leaves the file as it was.
func TestOverwrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.cassette")
	created := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	old := mustOpen(t, path, &store.Options{Now: func() time.Time { return created }})
	var recs []store.Record
	for id := uint64(1); id <= 3; id++ {
		recs = append(recs, store.Record{ID: id, Key: fmt.Sprint("old-", id), Shape: "s", Value: []byte(fmt.Sprint("old ", id))})
	}
	if err := old.Replace(store.Contents{Records: recs, Fixtures: map[string][]byte{"call_x": []byte(`{}`)}, Meta: store.Meta{Created: created, IndexRules: "rules-1"}}); err != nil {
		t.Fatal(err)
	}
	old.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	later := created.Add(24 * time.Hour)
	reopen := func() *store.Store {
		return mustOpen(t, path, &store.Options{Overwrite: true, Now: func() time.Time { return later }})
	}
	s := reopen()
	checkContents(t, "opened with Overwrite", s, 3, "old 2", true)
	s.Close()
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("opening with Overwrite and closing changed the file")
	}

	s = reopen()
	boom := errors.New("boom")
	res, err := s.AppendAll([]store.Pending{{Key: "k", Shape: "s", Encode: func(uint64) ([]byte, error) { return nil, boom }}})
	if err != nil || !errors.Is(res[0].Err, boom) {
		t.Fatalf("AppendAll of a failing encode = %v, %v", res, err)
	}
	checkContents(t, "after an append that stored nothing", s, 3, "old 2", true)

	res, err = s.AppendAll([]store.Pending{{Key: "new-1", Shape: "s", Encode: value("new")}, {Key: "new-2", Shape: "s", Encode: value("new")}})
	if err != nil || res[0].ID != 1 || res[1].ID != 2 {
		t.Fatalf("first AppendAll = %v, %v; want ids 1 and 2", res, err)
	}
	checkContents(t, "after the first append", s, 2, "2:new", false)
	if ids, _ := s.Lookup("old-1"); len(ids) != 0 {
		t.Errorf("Lookup of an old key = %v, want none", ids)
	}
	if ids, _ := s.Lookup("new-2"); fmt.Sprint(ids) != "[2]" {
		t.Errorf("Lookup(new-2) = %v, want [2]", ids)
	}
	m, err := s.Meta()
	if err != nil || !m.Created.Equal(later) || m.IndexRules != "rules-1" {
		t.Errorf("meta after the first append = %+v, %v; want created %s and the index rules kept", m, err, later)
	}
	// Only the first append starts afresh.
	res, err = s.AppendAll([]store.Pending{{Key: "new-3", Shape: "s", Encode: value("new")}})
	if err != nil || res[0].ID != 3 {
		t.Fatalf("second AppendAll = %v, %v; want id 3", res, err)
	}
	checkContents(t, "after the second append", s, 3, "2:new", false)
	s.Close()

	// A reader ignores Overwrite.
	r := mustOpen(t, path, &store.Options{ReadOnly: true, Overwrite: true})
	checkContents(t, "read-only", r, 3, "2:new", false)
}

// checkContents checks a store's interaction count, the value of id 2, and
// whether the fixture call_x is there.
func checkContents(t *testing.T, when string, s *store.Store, n int, second string, fixture bool) {
	t.Helper()
	if got, err := s.Len(); err != nil || got != n {
		t.Errorf("%s: Len = %d, %v; want %d", when, got, err, n)
	}
	if v, err := s.Get(2); err != nil || string(v) != second {
		t.Errorf("%s: Get(2) = %q, %v; want %q", when, v, err, second)
	}
	if _, err := s.Fixture("call_x"); (err == nil) != fixture {
		t.Errorf("%s: fixture call_x: %v, want present = %v", when, err, fixture)
	}
}
