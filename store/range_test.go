package store_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/llmproxy/llmproxy/store"
)

func TestRange(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "c.cassette"), nil)
	var recs []store.Pending
	for range 5 {
		recs = append(recs, store.Pending{Key: "k", Shape: "s", Encode: value("v")})
	}
	if _, err := s.AppendAll(recs); err != nil {
		t.Fatal(err)
	}
	walk := func(from uint64, back bool, limit int) string {
		var ids []uint64
		err := s.Range(from, back, func(id uint64, v []byte) (bool, error) {
			if want := fmt.Sprintf("%d:v", id); string(v) != want {
				t.Errorf("Range value of %d = %q, want %q", id, v, want)
			}
			ids = append(ids, id)
			return len(ids) < limit, nil
		})
		if err != nil {
			t.Fatalf("Range(%d, %v): %v", from, back, err)
		}
		return fmt.Sprint(ids)
	}
	for _, tc := range []struct {
		from  uint64
		back  bool
		limit int
		want  string
	}{
		{0, false, 10, "[1 2 3 4 5]"},
		{3, false, 10, "[3 4 5]"},
		{2, false, 2, "[2 3]"},
		{6, false, 10, "[]"},
		{3, true, 10, "[3 2 1]"},
		{9, true, 2, "[5 4]"},
		{0, true, 10, "[]"},
		{1, true, 10, "[1]"},
	} {
		if got := walk(tc.from, tc.back, tc.limit); got != tc.want {
			t.Errorf("Range(%d, back %v, %d at most) = %s, want %s", tc.from, tc.back, tc.limit, got, tc.want)
		}
	}
	boom := errors.New("boom")
	if err := s.Range(1, false, func(uint64, []byte) (bool, error) { return true, boom }); !errors.Is(err, boom) {
		t.Errorf("Range error = %v, want the callback's", err)
	}
	if last, err := s.Last(); err != nil || last != 5 {
		t.Errorf("Last = %d, %v; want 5", last, err)
	}
	empty := mustOpen(t, filepath.Join(t.TempDir(), "e.cassette"), nil)
	if last, err := empty.Last(); err != nil || last != 0 {
		t.Errorf("Last of an empty store = %d, %v; want 0", last, err)
	}
	if err := empty.Range(0, true, func(uint64, []byte) (bool, error) {
		t.Error("Range of an empty store called back")
		return false, nil
	}); err != nil {
		t.Error(err)
	}
}
