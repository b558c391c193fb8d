package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/wire"
)

// LogEntry is one request this process handled, as GET /_llmproxy/log
// shows it: when, on which cassette, what was asked, what answered it (an
// interaction id, or why nothing did), and the tool traffic it carried.
type LogEntry struct {
	// Seq numbers the entries in the order they were logged, from 1; the
	// log pages after one (GET /_llmproxy/log?after=SEQ&limit=N).
	Seq      uint64    `json:"seq"`
	Time     time.Time `json:"time"`
	Cassette string    `json:"cassette"`
	Method   string    `json:"method"`
	Upstream string    `json:"upstream"`
	Path     string    `json:"path"`
	Kind     string    `json:"kind"`
	// Model, Stream and Turns summarise an LLM request body: the model
	// asked for, whether a stream was, and the number of conversation turns.
	// For a request that was served or recorded they are read from its
	// interaction's request, equal to it under the matching rules.
	Model  string `json:"model,omitempty"`
	Stream bool   `json:"stream,omitempty"`
	Turns  int    `json:"turns,omitempty"`
	// Interaction is the id of the interaction served (replay) or recorded
	// (record); 0 when there was none, and then Miss says why.
	Interaction uint64 `json:"interaction,omitempty"`
	Miss        string `json:"miss,omitempty"`
	// Closest is the recorded interaction a miss is closest to, and
	// Differences where the request differs from it, the first first (at
	// most three).
	Closest     uint64             `json:"closest,omitempty"`
	Differences []match.Difference `json:"differences,omitempty"`
	// Repeat marks a serve of an exhausted recording under
	// --on-exhausted repeat-last.
	Repeat bool `json:"repeat,omitempty"`
	// Scenario, Conversation and Step say, in mock mode, which scenario
	// served the request, in which conversation, and by which step (Step
	// is "" on a miss).
	Scenario     string `json:"scenario,omitempty"`
	Conversation string `json:"conversation,omitempty"`
	Step         string `json:"step,omitempty"`
	// Incomplete marks a serve whose client left before the whole response
	// was delivered; the interaction stays unconsumed for its retry.
	Incomplete bool `json:"incomplete,omitempty"`
	Status     int  `json:"status"`
	// Millis is the time from the request's arrival to the end of its answer.
	Millis float64 `json:"ms"`
	// ToolCalls are the tool calls the response made.
	ToolCalls []cassette.ToolCall `json:"tool_calls,omitempty"`
	// ToolResults are the tool results the request sent.
	ToolResults []cassette.ToolResult `json:"tool_results,omitempty"`

	tape *tape  // where Interaction lives, for its tool calls
	name string // the X-Llmproxy-Cassette name, with a CassetteDir
	// summarized is set once the summary of Interaction is filled in; it
	// is built once, when the log is first read, and kept.
	summarized bool
}

// maxLoggedResult bounds the bytes of one tool result's content kept in
// the journal; a longer one is kept as a JSON string of its first bytes
// and a marker saying how long it was.
const maxLoggedResult = 4 << 10

// journal keeps the last entries handled by this process. Once full it is
// a ring, so that adding an entry costs the same at any fill.
type journal struct {
	mu      sync.Mutex
	limit   int
	entries []record // the oldest entry is at next once len(entries) == limit
	// The strings and tapes of the records, and the entries kept whole,
	// by seq.
	strs    table[string]
	tapes   table[*tape]
	wholes  map[uint64]*LogEntry
	next    int
	dropped int
	seq     uint64        // the Seq of the last entry added
	changed chan struct{} // closed and replaced by add

	// A client can hold its whole answer a moment before the proxy has
	// released the interaction and logged the request, and a test that asks
	// the API right after its call must still see both. So a request
	// brackets that moment (see begin), and the API's readers settle first:
	// they wait for the brackets of responses that have ended, never for a
	// response still under way. Brackets are kept by value and readers
	// wait on one channel that the next close closes, so that a bracket
	// costs a request no allocation.
	bracketSeq uint64
	brackets   map[uint64]bracket
	closed     chan struct{} // made by a waiting reader, closed by the next close
}

// A bracket spans the moment between a response's end reaching the client
// and its request being in the journal.
type bracket struct {
	tape *tape
	// ended is set once the client may hold the whole response; until
	// then readers do not wait for the bracket.
	ended bool
	// behind, if set, reports whether the recording still waits for an
	// earlier one on its cassette to be written: readers do not wait for it
	// either, and answer from what is written.
	behind func() bool
}

// bracketRef names an open bracket of a journal.
type bracketRef struct {
	j *journal
	n uint64
}

// begin opens a bracket for a request on tape t; ended says whether its
// response has already reached the client whole.
func (j *journal) begin(t *tape, ended bool) bracketRef {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.brackets == nil {
		j.brackets = map[uint64]bracket{}
	}
	n := j.bracketSeq
	j.bracketSeq++
	j.brackets[n] = bracket{tape: t, ended: ended}
	return bracketRef{j: j, n: n}
}

// end marks the bracket's response as delivered (or about to be) whole.
func (b bracketRef) end() {
	b.j.mu.Lock()
	defer b.j.mu.Unlock()
	if bk, ok := b.j.brackets[b.n]; ok {
		bk.ended = true
		b.j.brackets[b.n] = bk
	}
}

// setBehind sets the bracket's behind.
func (b bracketRef) setBehind(behind func() bool) {
	b.j.mu.Lock()
	defer b.j.mu.Unlock()
	if bk, ok := b.j.brackets[b.n]; ok {
		bk.behind = behind
		b.j.brackets[b.n] = bk
	}
}

// close closes the bracket: its request is in the journal.
func (b bracketRef) close() {
	j := b.j
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.brackets, b.n)
	if j.closed != nil {
		close(j.closed)
		j.closed = nil
	}
}

// settle waits until every bracket of an ended response open now is
// closed, or ctx ends. With want set, only the brackets of tapes for which
// want returns true count. Responses under way, and recordings waiting to
// be written behind one, are not waited for.
func (j *journal) settle(ctx context.Context, want func(*tape) bool) error {
	type wait struct {
		n      uint64
		behind func() bool
	}
	j.mu.Lock()
	waits := make([]wait, 0, len(j.brackets))
	for n, b := range j.brackets {
		if b.ended && (want == nil || want(b.tape)) {
			waits = append(waits, wait{n, b.behind})
		}
	}
	j.mu.Unlock()
	for _, w := range waits {
		if w.behind != nil && w.behind() {
			continue
		}
		if err := j.waitClosed(ctx, w.n); err != nil {
			return err
		}
	}
	return nil
}

// waitClosed waits until bracket n is closed, or ctx ends.
func (j *journal) waitClosed(ctx context.Context, n uint64) error {
	for {
		j.mu.Lock()
		if _, open := j.brackets[n]; !open {
			j.mu.Unlock()
			return nil
		}
		if j.closed == nil {
			j.closed = make(chan struct{})
		}
		closed := j.closed
		j.mu.Unlock()
		select {
		case <-closed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// record is a log entry as the journal holds it. An entry of a request
// served or recorded is its ids, times, status and flags, with its strings
// and its tape as numbers in the journal's tables: a fixed-size record
// without a pointer, so that the garbage collector, which marks the live
// heap at every cycle, never looks inside the ring, however full. Any other
// entry (a miss, a failure, a mock answer), and an entry whose summary was
// built when the log was read, is kept whole beside the ring, in
// journal.wholes.
type record struct {
	seq, interaction uint64
	sec              int64 // Time, in UTC: seconds and nanoseconds since 1970
	nsec             int32
	status           int
	millis           float64
	tape             uint32 // in journal.tapes
	// in journal.strs
	cassette, name, method, upstream, path, kind uint32
	repeat, incomplete, whole                    bool
}

// recordOf is the record of e, its strings and tape entered in j's tables;
// an entry that a record cannot hold is put in j.wholes.
func (j *journal) recordOf(e *LogEntry) record {
	if !e.fixed() {
		if j.wholes == nil {
			j.wholes = map[uint64]*LogEntry{}
		}
		whole := *e
		j.wholes[e.Seq] = &whole
		return record{seq: e.Seq, whole: true}
	}
	return record{seq: e.Seq, sec: e.Time.Unix(), nsec: int32(e.Time.Nanosecond()), millis: e.Millis,
		tape: j.tapes.enter(e.tape), interaction: e.Interaction, status: e.Status, repeat: e.Repeat, incomplete: e.Incomplete,
		cassette: j.strs.enter(e.Cassette), name: j.strs.enter(e.name), method: j.strs.enter(e.Method),
		upstream: j.strs.enter(e.Upstream), path: j.strs.enter(e.Path), kind: j.strs.enter(e.Kind)}
}

// drop lets go of what r holds in j's tables, once the ring no longer
// holds r.
func (j *journal) drop(r *record) {
	if r.whole {
		delete(j.wholes, r.seq)
		return
	}
	j.tapes.leave(r.tape)
	for _, n := range [...]uint32{r.cassette, r.name, r.method, r.upstream, r.path, r.kind} {
		j.strs.leave(n)
	}
}

// fixed reports whether a record holds all of e: every field it does not
// hold is zero (a test fails when LogEntry gains a field this does not
// know), and its time is in UTC without a monotonic reading, as the time of
// an exchange's entry is.
func (e *LogEntry) fixed() bool {
	return e.Model == "" && !e.Stream && e.Turns == 0 && e.Miss == "" && e.Closest == 0 && e.Differences == nil &&
		e.Scenario == "" && e.Conversation == "" && e.Step == "" && e.ToolCalls == nil && e.ToolResults == nil && !e.summarized &&
		e.Time == e.Time.UTC()
}

// entryOf is the log entry r holds.
func (j *journal) entryOf(r *record) LogEntry {
	if r.whole {
		return *j.wholes[r.seq]
	}
	return LogEntry{Seq: r.seq, Time: time.Unix(r.sec, int64(r.nsec)).UTC(), Millis: r.millis, tape: j.tapes.value(r.tape),
		Interaction: r.interaction, Status: r.status, Repeat: r.repeat, Incomplete: r.incomplete,
		Cassette: j.strs.value(r.cassette), name: j.strs.value(r.name), Method: j.strs.value(r.method),
		Upstream: j.strs.value(r.upstream), Path: j.strs.value(r.path), Kind: j.strs.value(r.kind)}
}

func (j *journal) add(e LogEntry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	e.Seq = j.seq
	if j.changed != nil {
		close(j.changed)
		j.changed = nil
	}
	r := j.recordOf(&e)
	if len(j.entries) < j.limit {
		j.entries = append(j.entries, r)
		return
	}
	j.drop(&j.entries[j.next])
	j.entries[j.next] = r
	j.next = (j.next + 1) % len(j.entries)
	j.dropped++
}

// A table numbers the distinct values the journal's records hold, from 1
// (0 is the zero value), and counts the records holding each, so that it
// holds no more than the ring does: a value no record holds any more is let
// go and its number used again.
type table[T comparable] struct {
	ids    map[T]uint32
	values []T   // by number - 1
	refs   []int // by number - 1
	free   []uint32
}

// enter counts one more record holding v and returns v's number.
func (t *table[T]) enter(v T) uint32 {
	var zero T
	if v == zero {
		return 0
	}
	if n, ok := t.ids[v]; ok {
		t.refs[n-1]++
		return n
	}
	if t.ids == nil {
		t.ids = map[T]uint32{}
	}
	var n uint32
	if k := len(t.free); k > 0 {
		n, t.free = t.free[k-1], t.free[:k-1]
		t.values[n-1], t.refs[n-1] = v, 1
	} else {
		t.values, t.refs = append(t.values, v), append(t.refs, 1)
		n = uint32(len(t.values))
	}
	t.ids[v] = n
	return n
}

// leave counts one record fewer holding the value numbered n.
func (t *table[T]) leave(n uint32) {
	if n == 0 {
		return
	}
	if t.refs[n-1]--; t.refs[n-1] == 0 {
		var zero T
		delete(t.ids, t.values[n-1])
		t.values[n-1] = zero
		t.free = append(t.free, n)
	}
}

// value is the value numbered n.
func (t *table[T]) value(n uint32) T {
	if n == 0 {
		var zero T
		return zero
	}
	return t.values[n-1]
}

// snapshot returns the entries, oldest first, and how many were dropped.
func (j *journal) snapshot() ([]LogEntry, int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]LogEntry, 0, len(j.entries))
	for k := range j.entries {
		out = append(out, j.entryOf(&j.entries[(j.next+k)%len(j.entries)]))
	}
	return out, j.dropped
}

// keep stores the summary built for the entry numbered seq, if the
// journal still holds it.
func (j *journal) keep(e LogEntry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := len(j.entries)
	if n == 0 {
		return
	}
	oldest := j.entries[j.next%n].seq
	if e.Seq < oldest || e.Seq > j.seq {
		return
	}
	at := (j.next + int(e.Seq-oldest)) % n
	if j.entries[at].seq == e.Seq {
		j.drop(&j.entries[at])
		j.entries[at] = j.recordOf(&e)
	}
}

// entry is the log entry of an exchange that ends now. The request body is
// summarised here, so the journal keeps no bodies.
func (x *exchange) entry(id uint64, miss string, status int) LogEntry {
	e := LogEntry{
		Time: x.start.UTC(), Cassette: x.tape.name, Method: x.req.Method, Upstream: x.route.name,
		Path: x.mreq.Path, Kind: string(x.kind), Interaction: id, Miss: miss, Status: status,
		Millis: float64(time.Since(x.start).Microseconds()) / 1000,
		tape:   x.tape, name: x.req.Header.Get(CassetteHeader),
		Closest: x.closest, Differences: x.diffs,
	}
	if id == 0 {
		// A request that was served or recorded is summarised from its
		// interaction when the log is read (see Server.logEntries), so that
		// serving it does not parse its body again.
		e.summarize(x.kind, x.mreq.Path, x.mreq.Body)
	}
	return e
}

// summarize fills in the request summary of an entry from a request body.
func (e *LogEntry) summarize(kind wire.Kind, path string, body []byte) {
	if kind == wire.KindGeneric {
		return
	}
	if req, err := wire.ParseRequest(kind, path, body); err == nil {
		e.summarizeParsed(&req)
	}
}

// summarizeParsed fills in the request summary from a request already read
// (what summarize reads from a body).
func (e *LogEntry) summarizeParsed(req *wire.Request) {
	e.Model, e.Stream, e.Turns = req.Model, req.Stream, len(req.Turns)
	e.ToolResults = cassette.ToolResults(req.ToolResults)
	for k, r := range e.ToolResults {
		if len(r.Content) > maxLoggedResult {
			mark := fmt.Sprintf("%s… [truncated by llmproxy: %d bytes]", r.Content[:maxLoggedResult], len(r.Content))
			e.ToolResults[k].Content, _ = json.Marshal(strings.ToValidUTF8(mark, ""))
		}
	}
}
