package cassette

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The short listing form of every record of the corpus, read in format 2
// and in format 1, is its Summary without the tool calls and the model.
func TestBriefIsSummaryRoute(t *testing.T) {
	for n, in := range recordCorpus() {
		want := Summarize(in)
		want.ToolCalls, want.Model, want.ID = nil, "", 42
		v2, err := encode(in)
		if err != nil {
			t.Fatal(err)
		}
		v1, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		for format, v := range map[int][]byte{1: v1, 2: v2} {
			got, err := brief(42, v)
			if err != nil {
				t.Fatalf("interaction %d, format %d: %v", n, format, err)
			}
			if !got.RecordedAt.Equal(want.RecordedAt) {
				t.Errorf("interaction %d, format %d: recorded at %v, want %v", n, format, got.RecordedAt, want.RecordedAt)
			}
			got.RecordedAt = want.RecordedAt
			if !reflect.DeepEqual(got, want) {
				t.Errorf("interaction %d, format %d: brief\n%+v\nwant\n%+v", n, format, got, want)
			}
		}
	}
}

// A damaged record's route or head, or its framing, is an error that names
// the interaction and wraps ErrBadRecord, never a panic; every truncation
// of a record is refused (its section lengths no longer add up).
func TestBriefDamage(t *testing.T) {
	_, good, rec := streamRecord(t)
	for _, tc := range []struct {
		name string
		v    []byte
	}{
		{"truncated head", rebuild(nil, rec.front, rec.head[:3], rec.body, rec.events, rec.table)},
		{"route cut short", rebuild(nil, rec.front[:5], rec.head, rec.body, rec.events, rec.table)},
		{"no section lengths", []byte{recordTag}},
	} {
		if _, err := brief(42, tc.v); !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), "interaction 42") {
			t.Errorf("%s: brief error %v, want ErrBadRecord naming interaction 42", tc.name, err)
		}
	}
	for n := 1; n < len(good); n++ {
		if _, err := brief(7, good[:n]); !errors.Is(err, ErrBadRecord) {
			t.Fatalf("record cut to %d of %d bytes: brief error %v, want ErrBadRecord", n, len(good), err)
		}
	}
}

// WalkBrief visits the interactions want accepts, in order, from the id
// given, until fn says stop, in a cassette of format 2 and one of format 1.
func TestWalkBrief(t *testing.T) {
	c, err := Open(filepath.Join(t.TempDir(), "b.cassette"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var items []Keyed
	for _, in := range fastCorpus() {
		items = append(items, Keyed{Interaction: in, Key: "k", Shape: "s"})
	}
	if _, err := c.AppendAll(items); err != nil {
		t.Fatal(err)
	}
	var got []uint64
	err = c.WalkBrief(2, func(id uint64) bool { return id%2 == 0 }, func(s *Summary) (bool, error) {
		got = append(got, s.ID)
		return len(got) < 2, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) < 5 || !reflect.DeepEqual(got, []uint64{2, 4}) {
		t.Errorf("WalkBrief(2, even ids, stop at 2) visited %v of %d, want [2 4]", got, len(items))
	}

	v1, err := Open(copyV1(t), Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer v1.Close()
	var want []Summary
	if err := v1.Walk(1, false, func(i *Interaction) (bool, error) {
		s := Summarize(i)
		s.ToolCalls, s.Model = nil, ""
		want = append(want, s)
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	var briefs []Summary
	if err := v1.WalkBrief(1, nil, func(s *Summary) (bool, error) { briefs = append(briefs, *s); return true, nil }); err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 || !reflect.DeepEqual(briefs, want) {
		t.Errorf("format 1: WalkBrief gave\n%+v\nwant\n%+v", briefs, want)
	}
}
