package proxy

import (
	"context"
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
}

// journal keeps the last entries handled by this process. Once full it is
// a ring, so that adding an entry costs the same at any fill.
type journal struct {
	mu      sync.Mutex
	limit   int
	entries []LogEntry // the oldest entry is at next once len(entries) == limit
	next    int
	dropped int
	changed chan struct{} // closed and replaced by add

	// A client can hold its whole answer a moment before the proxy has
	// released the interaction and logged the request, and a test that asks
	// the API right after its call must still see both. So a request
	// brackets that moment with begin and the function it returns, and the
	// API's readers settle first: they wait for every bracket open when they
	// arrive.
	bracketSeq uint64
	brackets   map[uint64]chan struct{}
}

// begin opens a bracket; the returned function closes it.
func (j *journal) begin() func() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.brackets == nil {
		j.brackets = map[uint64]chan struct{}{}
	}
	n, ch := j.bracketSeq, make(chan struct{})
	j.bracketSeq++
	j.brackets[n] = ch
	return func() {
		j.mu.Lock()
		delete(j.brackets, n)
		j.mu.Unlock()
		close(ch)
	}
}

// settle waits until every bracket open now is closed, or ctx ends.
func (j *journal) settle(ctx context.Context) error {
	j.mu.Lock()
	waits := make([]chan struct{}, 0, len(j.brackets))
	for _, ch := range j.brackets {
		waits = append(waits, ch)
	}
	j.mu.Unlock()
	for _, ch := range waits {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (j *journal) add(e LogEntry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.changed != nil {
		close(j.changed)
		j.changed = nil
	}
	if len(j.entries) < j.limit {
		j.entries = append(j.entries, e)
		return
	}
	j.entries[j.next] = e
	j.next = (j.next + 1) % len(j.entries)
	j.dropped++
}

// snapshot returns the entries, oldest first, and how many were dropped.
func (j *journal) snapshot() ([]LogEntry, int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]LogEntry, 0, len(j.entries))
	out = append(out, j.entries[j.next:]...)
	return append(out, j.entries[:j.next]...), j.dropped
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
		e.Model, e.Stream, e.Turns = req.Model, req.Stream, len(req.Turns)
		e.ToolResults = cassette.ToolResults(req.ToolResults)
	}
}
