package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/view"
	"github.com/llmproxy/llmproxy/wire"
)

// LogEntry is one request this process handled, as GET /_llmproxy/log
// shows it. It is view.LogEntry, llmproxy's one log entry type, named here
// for the proxy's callers (Server.Log, proxytest). For a request that was
// served or recorded, Model, Stream and Turns are read from its
// interaction's request, equal to it under the matching rules; an entry
// keeps at most maxLoggedSummary bytes of tool call arguments and tool
// result contents.
type LogEntry = view.LogEntry

// logged is a log entry as the journal keeps it: the entry, and what the
// proxy needs to finish it when the log is read.
type logged struct {
	LogEntry
	tape *tape // where Interaction lives, for its tool calls
	// summarized is set once the summary of Interaction is filled in; it
	// is built once, when the log is first read, and kept.
	summarized bool
}

const (
	// maxLoggedResult bounds the bytes of one tool result's content kept in
	// the journal; a longer one is kept as a JSON string of its first bytes
	// and a marker saying how long it was.
	maxLoggedResult = 4 << 10
	// maxLoggedSummary bounds the bytes of tool call arguments and tool
	// result contents one entry keeps, together: the calls and results past
	// it are counted (ToolCallsOmitted, ToolResultsOmitted), not kept.
	maxLoggedSummary = 16 << 10
	// defaultLogBytes is Config.LogBytes's default.
	defaultLogBytes = 32 << 20
)

// journal keeps the last entries handled by this process: at most limit
// of them, and at most maxBytes of them by their size (see record.size),
// dropping the oldest first. It is a ring, so that adding an entry costs
// the same at any fill.
type journal struct {
	mu       sync.Mutex
	limit    int
	maxBytes int
	// entries is the ring: count records from first on, wrapping; it grows
	// up to limit slots.
	entries      []record
	first, count int
	bytes        int // the sizes of the records held, added up
	// The strings and tapes of the records, and the entries kept whole,
	// by seq.
	strs    table[string]
	tapes   table[*tape]
	wholes  map[uint64]*logged
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
	// costs a request no allocation. The brackets open are slots of a
	// slice, a closed one's slot listed in free for the next, so that
	// opening and closing one hashes nothing: there are about as many
	// slots as requests were ever under way at once.
	bracketSeq uint64
	brackets   []bracketSlot
	free       []int32       // the slots of brackets that are closed
	open       int           // how many brackets are open
	closed     chan struct{} // made by a waiting reader, closed by the next close
}

// bracketSlot is a slot of journal.brackets: bracket number n while open.
type bracketSlot struct {
	bracket
	n    uint64
	open bool
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

// bracketRef names an open bracket of a journal: bracket number n, in
// slot k of its brackets. Once the bracket is closed, the slot may hold a
// later one, whose number differs.
type bracketRef struct {
	j *journal
	k int32
	n uint64
}

// begin opens a bracket for a request on tape t; ended says whether its
// response has already reached the client whole.
func (j *journal) begin(t *tape, ended bool) bracketRef {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := j.bracketSeq
	j.bracketSeq++
	var k int32
	if last := len(j.free) - 1; last >= 0 {
		k, j.free = j.free[last], j.free[:last]
	} else {
		k = int32(len(j.brackets))
		j.brackets = append(j.brackets, bracketSlot{})
	}
	j.brackets[k] = bracketSlot{bracket: bracket{tape: t, ended: ended}, n: n, open: true}
	j.open++
	return bracketRef{j: j, k: k, n: n}
}

// slot is bracket n's slot k while that bracket is open, else nil.
func (j *journal) slot(k int32, n uint64) *bracketSlot {
	if int(k) < len(j.brackets) && j.brackets[k].open && j.brackets[k].n == n {
		return &j.brackets[k]
	}
	return nil
}

// end marks the bracket's response as delivered (or about to be) whole.
func (b bracketRef) end() {
	b.j.mu.Lock()
	defer b.j.mu.Unlock()
	if s := b.j.slot(b.k, b.n); s != nil {
		s.ended = true
	}
}

// setBehind sets the bracket's behind.
func (b bracketRef) setBehind(behind func() bool) {
	b.j.mu.Lock()
	defer b.j.mu.Unlock()
	if s := b.j.slot(b.k, b.n); s != nil {
		s.behind = behind
	}
}

// close closes the bracket: its request is in the journal.
func (b bracketRef) close() {
	j := b.j
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closeLocked(b)
}

// closeLocked is b's close with j.mu held; b is a bracket of j.
func (j *journal) closeLocked(b bracketRef) {
	if s := j.slot(b.k, b.n); s != nil {
		*s = bracketSlot{} // lets go of its tape and behind
		j.free = append(j.free, b.k)
		j.open--
	}
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
		ref    bracketRef
		behind func() bool
	}
	j.mu.Lock()
	waits := make([]wait, 0, j.open)
	for k, s := range j.brackets {
		if s.open && s.ended && (want == nil || want(s.tape)) {
			waits = append(waits, wait{bracketRef{j: j, k: int32(k), n: s.n}, s.behind})
		}
	}
	j.mu.Unlock()
	for _, w := range waits {
		if w.behind != nil && w.behind() {
			continue
		}
		if err := j.waitClosed(ctx, w.ref); err != nil {
			return err
		}
	}
	return nil
}

// waitClosed waits until bracket b is closed, or ctx ends.
func (j *journal) waitClosed(ctx context.Context, b bracketRef) error {
	for {
		j.mu.Lock()
		if j.slot(b.k, b.n) == nil {
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
	// size is what the record holds, in bytes: itself and its strings,
	// and for an entry kept whole its fields (see LogEntry.size).
	size                                uint32
	repeat, incomplete, whole, recorded bool
}

// recordSize is the bytes of a record itself.
const recordSize = int(unsafe.Sizeof(record{}))

// recordOf is the record of e, its strings and tape entered in j's tables;
// an entry that a record cannot hold is put in j.wholes.
func (j *journal) recordOf(e *logged) record {
	if !e.fixed() {
		if j.wholes == nil {
			j.wholes = map[uint64]*logged{}
		}
		whole := *e
		j.wholes[e.Seq] = &whole
		return record{seq: e.Seq, whole: true, size: uint32(min(e.size(), math.MaxUint32))}
	}
	size := recordSize + len(e.Cassette) + len(e.Name) + len(e.Method) + len(e.Upstream) + len(e.Path) + len(e.Kind)
	return record{seq: e.Seq, size: uint32(min(size, math.MaxUint32)), sec: e.Time.Unix(), nsec: int32(e.Time.Nanosecond()), millis: e.Millis,
		tape: j.tapes.enter(e.tape), interaction: e.Interaction, status: e.Status, repeat: e.Repeat, incomplete: e.Incomplete, recorded: e.Recorded,
		cassette: j.strs.enter(e.Cassette), name: j.strs.enter(e.Name), method: j.strs.enter(e.Method),
		upstream: j.strs.enter(e.Upstream), path: j.strs.enter(e.Path), kind: j.strs.enter(e.Kind)}
}

// drop lets go of what r holds in j's tables, once the ring no longer
// holds r.
func (j *journal) drop(r *record) {
	j.bytes -= int(r.size)
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
func (e *logged) fixed() bool {
	return e.Model == "" && !e.Stream && e.Turns == 0 && e.Miss == "" && e.Closest == 0 && e.Differences == nil &&
		e.Scenario == "" && e.Conversation == "" && e.Step == "" && e.ToolCalls == nil && e.ToolResults == nil && !e.summarized &&
		e.ToolCallsOmitted == 0 && e.ToolResultsOmitted == 0 && e.Fault == "" && e.FaultRequest == 0 && e.FaultSkipped == "" &&
		e.Time == e.Time.UTC()
}

// entryOf is the log entry r holds.
func (j *journal) entryOf(r *record) logged {
	if r.whole {
		return *j.wholes[r.seq]
	}
	return logged{tape: j.tapes.value(r.tape), LogEntry: LogEntry{Seq: r.seq, Time: time.Unix(r.sec, int64(r.nsec)).UTC(), Millis: r.millis,
		Interaction: r.interaction, Status: r.status, Repeat: r.repeat, Incomplete: r.incomplete, Recorded: r.recorded,
		Cassette: j.strs.value(r.cassette), Name: j.strs.value(r.name), Method: j.strs.value(r.method),
		Upstream: j.strs.value(r.upstream), Path: j.strs.value(r.path), Kind: j.strs.value(r.kind)}}
}

// size is about the bytes an entry kept whole holds.
func (e *logged) size() int {
	n := recordSize + int(unsafe.Sizeof(*e)) + len(e.Cassette) + len(e.Name) + len(e.Method) + len(e.Upstream) +
		len(e.Path) + len(e.Kind) + len(e.Model) + len(e.Miss) + len(e.Scenario) + len(e.Conversation) + len(e.Step) +
		len(e.Fault) + len(e.FaultSkipped)
	for _, d := range e.Differences {
		n += int(unsafe.Sizeof(d)) + len(d.Path) + len(d.Where) + len(d.Got) + len(d.Want)
	}
	for _, c := range e.ToolCalls {
		n += int(unsafe.Sizeof(c)) + len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	for _, r := range e.ToolResults {
		n += int(unsafe.Sizeof(r)) + len(r.ID) + len(r.Name) + len(r.Content)
	}
	return n
}

func (j *journal) add(e logged) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.addLocked(e)
}

// addClosing is add, then b's close (when b is open), under one lock: what
// a served request does last.
func (j *journal) addClosing(e logged, b bracketRef) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.addLocked(e)
	if b.j == j {
		j.closeLocked(b)
	}
}

// addLocked is add with j.mu held.
func (j *journal) addLocked(e logged) {
	j.seq++
	e.Seq = j.seq
	if j.changed != nil {
		close(j.changed)
		j.changed = nil
	}
	r := j.recordOf(&e)
	j.bytes += int(r.size)
	j.push(r)
	j.trim()
}

// at is the k-th oldest record held.
func (j *journal) at(k int) *record { return &j.entries[(j.first+k)%len(j.entries)] }

// push adds r as the newest record, dropping the oldest when limit are
// held. A full ring under its limit doubles (its length is its number of
// slots), so an add costs the same however many records are held.
func (j *journal) push(r record) {
	if j.count == len(j.entries) && len(j.entries) < max(j.limit, 1) {
		grown := make([]record, min(max(j.limit, 1), 2*j.count+16))
		for k := range j.count {
			grown[k] = *j.at(k)
		}
		j.entries, j.first = grown, 0
	}
	if j.count == len(j.entries) {
		j.evict()
	}
	j.entries[(j.first+j.count)%len(j.entries)] = r
	j.count++
}

// evict drops the oldest record.
func (j *journal) evict() {
	j.drop(j.at(0))
	*j.at(0) = record{}
	j.first = (j.first + 1) % len(j.entries)
	j.count--
	j.dropped++
}

// trim drops the oldest records while those held are more than maxBytes
// (the newest is always kept).
func (j *journal) trim() {
	limit := j.maxBytes
	if limit <= 0 {
		limit = defaultLogBytes
	}
	for j.bytes > limit && j.count > 1 {
		j.evict()
	}
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
func (j *journal) snapshot() ([]logged, int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]logged, 0, j.count)
	for k := range j.count {
		out = append(out, j.entryOf(j.at(k)))
	}
	return out, j.dropped
}

// keep stores the summary built for the entry numbered seq, if the
// journal still holds it.
func (j *journal) keep(e logged) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.count == 0 {
		return
	}
	oldest := j.at(0).seq
	if e.Seq < oldest || e.Seq > j.seq {
		return
	}
	if r := j.at(int(e.Seq - oldest)); r.seq == e.Seq {
		j.drop(r)
		*r = j.recordOf(&e)
		j.bytes += int(r.size)
		j.trim()
	}
}

// entry is the log entry of an exchange that ends now. The request body is
// summarised here, so the journal keeps no bodies.
func (x *exchange) entry(id uint64, miss string, status int) logged {
	e := logged{tape: x.tape, LogEntry: LogEntry{
		Time: x.start.UTC(), Cassette: x.tape.name, Method: x.req.Method, Upstream: x.route.name,
		Path: x.mreq.Path, Kind: string(x.kind), Interaction: id, Miss: miss, Status: status,
		Millis:  float64(time.Since(x.start).Microseconds()) / 1000,
		Name:    x.req.Header.Get(CassetteHeader),
		Closest: x.closest, Differences: x.diffs,
	}}
	if id == 0 {
		// A request that was served or recorded is summarised from its
		// interaction when the log is read (see Server.logEntries), so that
		// serving it does not parse its body again.
		e.summarize(x.kind, x.mreq.Path, x.mreq.Body)
	}
	return e
}

// summarize fills in the request summary of an entry from a request body.
func (e *logged) summarize(kind wire.Kind, path string, body []byte) {
	if kind == wire.KindGeneric {
		return
	}
	if req, err := wire.ParseRequest(kind, path, body); err == nil {
		e.summarizeParsed(&req)
	}
}

// summarizeParsed fills in the request summary from a request already read
// (what summarize reads from a body).
func (e *logged) summarizeParsed(req *wire.Request) {
	e.Model, e.Stream, e.Turns = strings.Clone(req.Model), req.Stream, len(req.Turns)
	e.ToolResults = nil
	budget := maxLoggedSummary
	for _, c := range e.ToolCalls {
		budget -= len(c.Arguments)
	}
	for k := range req.ToolResults {
		if budget <= 0 {
			e.ToolResultsOmitted = len(req.ToolResults) - k
			break
		}
		kept := cassette.ToolResults(req.ToolResults[k : k+1])[0]
		if len(kept.Content) > min(maxLoggedResult, budget) {
			mark := fmt.Sprintf("%s… [truncated by llmproxy: %d bytes]", kept.Content[:min(maxLoggedResult, budget)], len(kept.Content))
			kept.Content, _ = json.Marshal(strings.ToValidUTF8(mark, ""))
		} else {
			kept.Content = bytes.Clone(kept.Content) // not the request body it lies in
		}
		kept.ID, kept.Name = strings.Clone(kept.ID), strings.Clone(kept.Name)
		budget -= len(kept.Content)
		e.ToolResults = append(e.ToolResults, kept)
	}
}

// keepToolCalls sets the tool calls of an entry, as many as
// maxLoggedSummary holds (a call whose arguments alone are past it is kept
// with its arguments as a truncated JSON string).
func (e *logged) keepToolCalls(calls []cassette.ToolCall) {
	e.ToolCalls, e.ToolCallsOmitted = nil, 0
	budget := maxLoggedSummary
	for k, c := range calls {
		if budget <= 0 {
			e.ToolCallsOmitted = len(calls) - k
			return
		}
		if len(c.Arguments) > min(maxLoggedResult, budget) {
			mark := fmt.Sprintf("%s… [truncated by llmproxy: %d bytes]", c.Arguments[:min(maxLoggedResult, budget)], len(c.Arguments))
			c.Arguments, _ = json.Marshal(strings.ToValidUTF8(mark, ""))
		} else {
			c.Arguments = bytes.Clone(c.Arguments) // not the response it lies in
		}
		c.ID, c.Name = strings.Clone(c.ID), strings.Clone(c.Name)
		budget -= len(c.Arguments)
		e.ToolCalls = append(e.ToolCalls, c)
	}
}
