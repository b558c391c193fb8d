package cassette

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"slices"

	"github.com/llmproxy/llmproxy/wire"
)

// Conversations tells which recorded conversation each chat request
// belongs to, by its message history, as a recording's requests are given
// to Add in recorded order. A request continues the latest conversation
// whose last request's turns (compacted JSON) are a strict prefix of its
// own turns; a request that names a stored answer by previous_response_id
// continues the conversation that answer ended, and no other; any other
// request begins a conversation. `scenario from-cassette`, `diff` and `report` group
// alike through it.
//
// It keeps a hash and a few counters per conversation, never the bodies,
// and finds a request's conversation in time linear in its turns. The zero
// value is ready to use; a Conversations belongs to one goroutine.
type Conversations struct {
	seed     maphash.Seed
	convs    []convState
	byPrefix map[uint64][]int // the conversations whose last request's turns hash so
	byAnswer map[string]int   // the conversation whose last answer has this Responses id
}

type convState struct {
	hash   uint64 // of the last request's turns; 0 when it had none
	turns  int    // the last request's turn count
	n      int    // requests so far
	answer string // the last answer's Responses id
}

// Add returns the conversation of req, a request read (wire.ParseRequest)
// from body: its number, counting from 0 in the order of the
// conversations' first requests, and the request's turn in it, from 0.
// responseID is the Responses id of the request's answer ("" for none),
// which a later request may name in previous_response_id.
func (c *Conversations) Add(req wire.Request, body []byte, responseID string) (conv, turn int) {
	if c.byPrefix == nil {
		c.seed = maphash.MakeSeed()
		c.byPrefix = map[uint64][]int{}
		c.byAnswer = map[string]int{}
	}
	prefixes := c.prefixHashes(req, body)
	conv = c.continued(prefixes, req.Previous)
	if conv < 0 {
		conv = len(c.convs)
		c.convs = append(c.convs, convState{})
	}
	st := &c.convs[conv]
	turn = st.n
	st.n++
	if st.turns > 0 {
		c.byPrefix[st.hash] = slices.DeleteFunc(c.byPrefix[st.hash], func(n int) bool { return n == conv })
		if len(c.byPrefix[st.hash]) == 0 {
			delete(c.byPrefix, st.hash)
		}
	}
	st.turns, st.hash = len(prefixes), 0
	if st.turns > 0 {
		st.hash = prefixes[st.turns-1]
		c.byPrefix[st.hash] = append(c.byPrefix[st.hash], conv)
	}
	if st.answer != "" && c.byAnswer[st.answer] == conv {
		delete(c.byAnswer, st.answer)
	}
	st.answer = responseID
	if responseID != "" {
		c.byAnswer[responseID] = conv
	}
	return conv, turn
}

// Len is the number of conversations so far.
func (c *Conversations) Len() int { return len(c.convs) }

// continued is the conversation a request continues, -1 for none: by
// previous (when set) alone, else the latest one whose last turns are a
// strict prefix of the request's.
func (c *Conversations) continued(prefixes []uint64, previous string) int {
	if previous != "" {
		if conv, ok := c.byAnswer[previous]; ok {
			return conv
		}
		return -1
	}
	best := -1
	for k := 0; k+1 < len(prefixes); k++ {
		for _, conv := range c.byPrefix[prefixes[k]] {
			if c.convs[conv].turns == k+1 {
				best = max(best, conv)
			}
		}
	}
	return best
}

// prefixHashes hashes each prefix of the request's turns (TurnHashes
// under the conversations' seed).
func (c *Conversations) prefixHashes(req wire.Request, body []byte) []uint64 {
	return TurnHashes(c.seed, req, body)
}

// TurnHashes hashes each prefix of a chat request's turns under seed:
// element k is the hash of turns 0..k, each compacted, so that a request
// whose history begins with another's full turns has that request's last
// hash among its own. Conversations groups by them; a refresh finds the
// request a new one continues by them.
func TurnHashes(seed maphash.Seed, req wire.Request, body []byte) []uint64 {
	out := make([]uint64, 0, len(req.Turns))
	var h maphash.Hash
	h.SetSeed(seed)
	var b bytes.Buffer
	for _, t := range req.Turns {
		raw := t.Raw(body)
		b.Reset()
		if json.Compact(&b, raw) != nil {
			b.Reset()
			b.Write(raw)
		}
		var n [8]byte
		for i, l := 0, uint64(b.Len()); i < 8; i++ {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:]) // the length first: no two turn lists hash as one byte string
		h.Write(b.Bytes())
		out = append(out, h.Sum64())
	}
	return out
}
