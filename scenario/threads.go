package scenario

import (
	"bytes"
	"encoding/json"

	"github.com/llmproxy/llmproxy/wire"
)

// Threads groups a cassette's requests into conversations, in recorded
// order: the one grouping that from-cassette and llmproxy report use. A
// request continues the latest conversation whose last request's turns
// begin its own (and are fewer), or, naming a Responses answer by
// previous_response_id, the conversation that answer ended; any other
// request begins a new conversation. The zero value is empty and ready.
type Threads struct {
	list []*thread
}

// thread is one conversation as Threads knows it: what its next request
// starts with.
type thread struct {
	turns      []json.RawMessage // the last request's turns, compacted
	responseID string            // the last answer's Responses id
	n          int               // requests placed
}

// Place puts a request (req parsed from body) in its conversation, given
// the Responses id of its answer ("" for none), and returns the
// conversation's number (from 0, in the order of their first requests) and
// the request's turn in it (from 1).
func (ts *Threads) Place(req wire.Request, body []byte, responseID string) (conv, turn int) {
	turns := compactTurns(req, body)
	conv = ts.continued(turns, req.Previous)
	if conv < 0 {
		conv = len(ts.list)
		ts.list = append(ts.list, &thread{})
	}
	th := ts.list[conv]
	th.turns, th.responseID = turns, responseID
	th.n++
	return conv, th.n
}

// Len is the number of conversations placed so far.
func (ts *Threads) Len() int { return len(ts.list) }

// continued returns the conversation a request continues (see Threads),
// -1 for a new conversation.
func (ts *Threads) continued(turns []json.RawMessage, previous string) int {
	for n := len(ts.list) - 1; n >= 0; n-- {
		c := ts.list[n]
		if previous != "" && c.responseID == previous {
			return n
		}
		if previous == "" && len(c.turns) > 0 && len(c.turns) < len(turns) && prefix(c.turns, turns) {
			return n
		}
	}
	return -1
}

// compactTurns returns a request's turns as compact JSON, for comparing
// histories.
func compactTurns(req wire.Request, body []byte) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(req.Turns))
	for _, t := range req.Turns {
		var b bytes.Buffer
		if err := json.Compact(&b, t.Raw(body)); err != nil {
			b.Reset()
			b.Write(t.Raw(body))
		}
		out = append(out, b.Bytes())
	}
	return out
}

func prefix(a, b []json.RawMessage) bool {
	for n := range a {
		if !bytes.Equal(a[n], b[n]) {
			return false
		}
	}
	return true
}
