package proxy

import (
	"sync"
	"time"

	"github.com/llmproxy/llmproxy/wire"
)

// logEntry is one served request, as GET /_llmproxy/log shows it.
type logEntry struct {
	Time        time.Time `json:"time"`
	Cassette    string    `json:"cassette"`
	Method      string    `json:"method"`
	Upstream    string    `json:"upstream"`
	Path        string    `json:"path"`
	Kind        string    `json:"kind"`
	Interaction uint64    `json:"interaction,omitempty"`
	Miss        string    `json:"miss,omitempty"`
	Status      int       `json:"status"`

	tape    *tape
	reqBody []byte
}

// journal keeps the last entries served by this process.
type journal struct {
	mu      sync.Mutex
	limit   int
	entries []logEntry
	dropped int
}

func (j *journal) add(e logEntry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.entries) >= j.limit {
		n := len(j.entries) - j.limit + 1
		j.entries = append(j.entries[:0], j.entries[n:]...)
		j.dropped += n
	}
	j.entries = append(j.entries, e)
}

func (j *journal) snapshot() ([]logEntry, int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]logEntry(nil), j.entries...), j.dropped
}

func (x *exchange) entry(id uint64, miss string, status int) logEntry {
	e := logEntry{
		Time: x.start.UTC(), Cassette: x.tape.name, Method: x.req.Method, Upstream: x.route.name,
		Path: x.route.path, Kind: string(x.kind), Interaction: id, Miss: miss, Status: status, tape: x.tape,
	}
	if x.kind != wire.KindGeneric {
		e.reqBody = x.body
	}
	return e
}
