package proxy

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// The journal keeps the last limit entries, oldest first, and counts the
// ones it dropped, however many times it wrapped.
func TestJournalKeepsTheLastEntriesInOrder(t *testing.T) {
	for _, n := range []int{0, 2, 3, 4, 7, 12} {
		j := journal{limit: 3}
		for k := 1; k <= n; k++ {
			j.add(logged{LogEntry: LogEntry{Status: k}})
		}
		got, dropped := j.snapshot()
		first := max(1, n-2)
		if len(got) != n-first+1 && !(n == 0 && len(got) == 0) {
			t.Fatalf("after %d adds: %d entries, want %d", n, len(got), min(n, 3))
		}
		for i, e := range got {
			if e.Status != first+i {
				t.Errorf("after %d adds: entry %d is %d, want %d", n, i, e.Status, first+i)
			}
		}
		if want := max(0, n-3); dropped != want {
			t.Errorf("after %d adds: dropped %d, want %d", n, dropped, want)
		}
	}
}

// A summary built once is kept in the ring, after it wrapped too, and the
// entries are numbered in the order they were added.
func TestJournalKeepsBuiltSummaries(t *testing.T) {
	j := journal{limit: 3}
	for k := 1; k <= 5; k++ {
		j.add(logged{LogEntry: LogEntry{Status: k}})
	}
	got, _ := j.snapshot()
	for i, e := range got {
		if e.Seq != uint64(3+i) {
			t.Fatalf("entry %d has seq %d, want %d", i, e.Seq, 3+i)
		}
	}
	e := got[1]
	e.Model, e.summarized = "kept", true
	j.keep(e)
	j.keep(logged{LogEntry: LogEntry{Seq: 1, Model: "gone"}}) // dropped: ignored
	got, _ = j.snapshot()
	if got[1].Model != "kept" || !got[1].summarized || got[0].Model != "" || got[2].Model != "" {
		t.Errorf("after keep: %+v", got)
	}
}

// since numbers entries from 1 in the order added, whatever the journal
// dropped, and keeps the newest limit of those after the cursor.
func TestJournalSince(t *testing.T) {
	j := journal{limit: 3}
	changed := j.changes()
	for k := 1; k <= 7; k++ {
		j.add(logged{LogEntry: LogEntry{Status: k}})
	}
	select {
	case <-changed:
	default:
		t.Error("add did not close the channel of changes")
	}
	for _, tc := range []struct {
		after uint64
		limit int
		want  []int
	}{
		{0, 10, []int{5, 6, 7}},
		{5, 10, []int{6, 7}},
		{7, 10, nil},
		{9, 10, nil},
		{0, 2, []int{6, 7}},
		{5, 1, []int{7}},
	} {
		got, seqs := j.since(tc.after, tc.limit)
		var statuses []int
		for k, e := range got {
			statuses = append(statuses, e.Status)
			if seqs[k] != uint64(e.Status) {
				t.Errorf("since(%d, %d): entry %d numbered %d", tc.after, tc.limit, e.Status, seqs[k])
			}
		}
		if fmt.Sprint(statuses) != fmt.Sprint(tc.want) {
			t.Errorf("since(%d, %d) = %v, want %v", tc.after, tc.limit, statuses, tc.want)
		}
	}
	var empty journal
	if got, _ := empty.since(0, 5); len(got) != 0 {
		t.Errorf("an empty journal gave %v", got)
	}
}

// settle waits for the brackets of ended responses, and only for those:
// not for a response under way, nor for a recording behind another, nor
// past its context.
func TestJournalSettleWaitsForEndedBrackets(t *testing.T) {
	var j journal
	under := j.begin(nil, false)
	behind := j.begin(nil, true)
	behind.setBehind(func() bool { return true })
	ended := j.begin(nil, true)
	settled := make(chan error, 1)
	go func() { settled <- j.settle(context.Background(), nil) }()
	select {
	case err := <-settled:
		t.Fatalf("settle returned %v with an ended bracket open", err)
	case <-time.After(20 * time.Millisecond):
	}
	ended.close()
	select {
	case err := <-settled:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("settle still waits after the ended bracket closed")
	}
	under.end()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := j.settle(ctx, nil); err != context.Canceled {
		t.Fatalf("settle with an ended bracket open and its context done: %v", err)
	}
	if err := j.settle(context.Background(), func(*tape) bool { return false }); err != nil {
		t.Fatalf("settle on no tape: %v", err)
	}
	under.close()
	behind.close()
	if j.open != 0 {
		t.Fatalf("%d brackets left open", j.open)
	}
}

// A closed bracket's slot serves the next, and a reference to the closed
// one neither ends, nor closes, nor waits for the bracket in its slot now.
func TestJournalBracketSlotsReused(t *testing.T) {
	var j journal
	old := j.begin(nil, false)
	old.close()
	now := j.begin(nil, false)
	if now.k != old.k || now.n == old.n {
		t.Fatalf("the second bracket is %+v after %+v: want the same slot, another number", now, old)
	}
	old.end()
	old.close()
	if j.open != 1 || j.brackets[now.k].ended {
		t.Fatalf("a stale reference changed the open bracket: %d open, %+v", j.open, j.brackets[now.k])
	}
	if err := j.waitClosed(context.Background(), old); err != nil {
		t.Fatalf("waiting for a closed bracket: %v", err)
	}
	now.end()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := j.settle(ctx, nil); err != context.DeadlineExceeded {
		t.Fatalf("settle with the reused slot's bracket ended and open: %v", err)
	}
	j.addClosing(logged{}, now)
	if err := j.settle(context.Background(), nil); err != nil || j.open != 0 || len(j.free) != 1 {
		t.Fatalf("after addClosing: settle %v, %d open, %d free slots", err, j.open, len(j.free))
	}
}

// The journal gives back every field of every entry: a record holds the
// fields of a request served or recorded, and any entry with another field
// set is kept whole. Each field is set alone in turn, so a field added to
// LogEntry that the record would drop fails here.
func TestJournalRecordKeepsEveryField(t *testing.T) {
	typ := reflect.TypeOf(LogEntry{})
	sets := map[string]func(*logged){
		"tape":       func(e *logged) { e.tape = &tape{name: "t"} },
		"summarized": func(e *logged) { e.summarized = true },
	}
	for k := range typ.NumField() {
		f := typ.Field(k)
		sets["LogEntry."+f.Name] = func(e *logged) {
			v := reflect.ValueOf(&e.LogEntry).Elem().Field(k)
			switch v.Kind() {
			case reflect.String:
				v.SetString("x")
			case reflect.Bool:
				v.SetBool(true)
			case reflect.Int:
				v.SetInt(7)
			case reflect.Uint64:
				v.SetUint(7)
			case reflect.Float64:
				v.SetFloat(1.5)
			case reflect.Slice:
				v.Set(reflect.MakeSlice(v.Type(), 1, 1))
			case reflect.Struct:
				v.Set(reflect.ValueOf(time.Unix(1700000000, 5).UTC()))
			default:
				t.Fatalf("LogEntry.%s: kind %s this test cannot set", f.Name, v.Kind())
			}
		}
	}
	wrapper := reflect.TypeOf(logged{})
	for k := range wrapper.NumField() {
		if f := wrapper.Field(k); !f.Anonymous && sets[f.Name] == nil {
			t.Fatalf("logged.%s: a field this test does not know; set it here, and check that a record keeps it", f.Name)
		}
	}
	for name, set := range sets {
		var e logged
		set(&e)
		j := journal{limit: 2}
		j.add(e)
		got, _ := j.snapshot()
		e.Seq = 1
		if len(got) != 1 || !reflect.DeepEqual(got[0], e) {
			t.Errorf("%s set alone: the journal gives back %+v, want %+v", name, got, e)
		}
	}
}

// The ring's records hold their strings and tapes as numbers in tables
// that keep only what the ring holds: after a thousand entries with paths
// and tapes of their own, and misses kept whole, through a ring of three,
// the tables hold the three newest entries' values, and every entry comes
// back as it went in.
func TestJournalTablesHoldOnlyTheRing(t *testing.T) {
	j := journal{limit: 3}
	at := time.Unix(1700000000, 0).UTC()
	entry := func(k int) logged {
		e := logged{tape: &tape{name: "c"}, LogEntry: LogEntry{Time: at.Add(time.Duration(k) * time.Millisecond), Cassette: "c", Method: "POST", Upstream: "openai",
			Path: fmt.Sprintf("/v1/files/%d", k), Kind: "openai-chat", Interaction: uint64(k), Status: 200}}
		if k%4 == 0 {
			e.Interaction, e.Miss, e.tape = 0, fmt.Sprintf("miss %d", k), nil
		}
		return e
	}
	const n = 1000
	for k := 1; k <= n; k++ {
		j.add(entry(k))
	}
	got, dropped := j.snapshot()
	if dropped != n-3 || len(got) != 3 {
		t.Fatalf("%d entries, %d dropped; want 3, %d", len(got), dropped, n-3)
	}
	for i, e := range got {
		want := entry(n - 2 + i)
		want.Seq = uint64(n - 2 + i)
		want.tape = e.tape // a fresh tape per call: compared by name below
		if !reflect.DeepEqual(e, want) || (want.Interaction != 0 && (e.tape == nil || e.tape.name != "c")) {
			t.Errorf("entry %d: %+v, want %+v", i, e, want)
		}
	}
	whole := 0
	for k := n - 2; k <= n; k++ {
		if k%4 == 0 {
			whole++
		}
	}
	if len(j.wholes) != whole {
		t.Errorf("%d entries kept whole, want %d", len(j.wholes), whole)
	}
	// Fixed records: three paths and three tapes at most, and "c", "POST",
	// "openai", "openai-chat".
	if live := len(j.strs.ids); live > 3+4 {
		t.Errorf("the string table holds %d values, want at most 7: %v", live, j.strs.ids)
	}
	if live := len(j.tapes.ids); live > 3 {
		t.Errorf("the tape table holds %d tapes, want at most 3", live)
	}
	if len(j.strs.values) > 3+4+1 || len(j.tapes.values) > 3+1 {
		t.Errorf("the tables grew to %d strings and %d tapes: numbers are not used again", len(j.strs.values), len(j.tapes.values))
	}
}

// A record holds no pointer, so that the garbage collector never scans the
// ring: a field that adds one fails here.
func TestJournalRecordHoldsNoPointer(t *testing.T) {
	typ := reflect.TypeOf(record{})
	for k := range typ.NumField() {
		switch f := typ.Field(k); f.Type.Kind() {
		case reflect.Bool, reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint32, reflect.Uint64, reflect.Float64:
		default:
			t.Errorf("record.%s is a %s: a record must hold no pointer", f.Name, f.Type)
		}
	}
}

// The ring grows by doubling up to its limit, so adding an entry costs the
// same however many are held: 5 000 adds under a limit of 10 000 copy the
// ring a dozen times, not once an add.
func TestJournalRingGrowsByDoubling(t *testing.T) {
	j := journal{limit: 10000}
	grows, last := 0, 0
	for k := 1; k <= 5000; k++ {
		j.add(logged{LogEntry: LogEntry{Status: k}})
		if n := len(j.entries); n != last {
			grows, last = grows+1, n
		}
	}
	if grows > 12 {
		t.Errorf("the ring was reallocated %d times for 5 000 adds, want at most 12 (doubling)", grows)
	}
	got, _ := j.snapshot()
	if len(got) != 5000 || got[0].Status != 1 || got[4999].Status != 5000 {
		t.Errorf("after 5 000 adds: %d entries, first %d, last %d", len(got), got[0].Status, got[len(got)-1].Status)
	}
}

// BenchmarkJournalBrackets is what a served request costs the journal
// with 64 requests under way: its bracket's begin and end, then its entry
// added and the bracket closed.
func BenchmarkJournalBrackets(b *testing.B) {
	j := &journal{limit: 1000, maxBytes: 1 << 20}
	tp := &tape{name: "t"}
	e := logged{tape: tp, LogEntry: LogEntry{Method: "POST", Path: "/v1/chat/completions", Status: 200}}
	var open [64]bracketRef
	for i := range open {
		open[i] = j.begin(tp, false)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := i % len(open)
		j.addClosing(e, open[k])
		open[k] = j.begin(tp, false)
		open[k].end()
		i++
	}
}
