package cassette

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pruneSample writes a cassette of n interactions, the k-th asking
// "question k", and returns its path and bytes.
func pruneSample(t *testing.T, n int) (string, []byte) {
	t.Helper()
	ct := &Contents{}
	for k := 1; k <= n; k++ {
		ct.Interactions = append(ct.Interactions, &Interaction{
			Upstream: "openai", Provider: "openai", Kind: "openai-chat", RecordedAt: time.Date(2026, 1, k, 0, 0, 0, 0, time.UTC),
			Request:  Request{Method: "POST", Path: "/v1/chat/completions", Body: Body(fmt.Sprintf(`{"q":"question %d"}`, k))},
			Response: Response{Status: 200, Body: Body(`{}`)},
		})
	}
	path := filepath.Join(t.TempDir(), "p.cassette")
	if err := WriteFile(path, ct, testKeys, Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

func TestPrune(t *testing.T) {
	path, _ := pruneSample(t, 5)
	removed, err := Prune(path, []uint64{4, 2}, testKeys, "rules-x", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 || removed[0].ID != 2 || removed[1].ID != 4 {
		t.Fatalf("removed %+v, want interactions 2 and 4", removed)
	}
	c, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	all, err := c.All()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, i := range all {
		got = append(got, fmt.Sprintf("%d:%s", i.ID, i.Request.Body))
	}
	want := `1:{"q":"question 1"} 2:{"q":"question 3"} 3:{"q":"question 5"}`
	if strings.Join(got, " ") != want {
		t.Errorf("left %s\nwant %s", strings.Join(got, " "), want)
	}
	if ids, err := c.Lookup(`POST openai/v1/chat/completions {"q":"question 5"}`); err != nil || len(ids) != 1 || ids[0] != 3 {
		t.Errorf("the index finds question 5 at %v (%v), want interaction 3", ids, err)
	}
	if m, _ := c.Meta(); m.IndexRules != "rules-x" {
		t.Errorf("index rules %q, want rules-x", m.IndexRules)
	}
}

// TestPruneLeavesTheOldFile: an id the cassette does not hold, nothing to
// drop, and a write that fails before its rename each leave the old file
// byte-identical and nothing beside it.
func TestPruneLeavesTheOldFile(t *testing.T) {
	failed := errors.New("disk full")
	tests := []struct {
		name string
		drop []uint64
		opts Options
		want error
	}{
		{"id not in the cassette", []uint64{2, 9, 0}, Options{}, ErrNoInteraction},
		{"nothing to drop", nil, Options{}, nil},
		{"write fails", []uint64{1}, Options{beforeCommit: func() error { return failed }}, failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, before := pruneSample(t, 3)
			removed, err := Prune(path, tt.drop, testKeys, "", tt.opts)
			if !errors.Is(err, tt.want) || (tt.want != nil && removed != nil) {
				t.Fatalf("Prune: %v, %v; want %v", removed, err, tt.want)
			}
			if tt.want == ErrNoInteraction && !strings.Contains(err.Error(), "not 9, 0") {
				t.Errorf("error %q does not name the ids", err)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Errorf("the cassette changed")
			}
			names, _ := os.ReadDir(filepath.Dir(path))
			if len(names) != 1 {
				t.Errorf("the directory holds %v, want the cassette alone", names)
			}
		})
	}
}
