package proxy

import (
	"fmt"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
)

// tape is one cassette as this process uses it: the open cassette, its
// index, the write-behind queue of its recordings and the replay state of
// its interactions. Every request that names the cassette shares its tape.
// Reads of the cassette (replay, the API) go to c directly: bbolt lets
// them run beside the writer's transactions, never waiting for them.
type tape struct {
	name string // the cassette's path

	// opened is closed once the fields below are set, or openErr is (see
	// tapeSet.get); until then only name may be read.
	opened  chan struct{}
	openErr error

	// users counts the requests using the tape and used orders the tapes
	// by last use (both under tapeSet.mu).
	users int
	used  uint64

	c      *cassette.Cassette
	index  *index
	writer *writeBehind
	plays  *plays
	cache  *replyCache // a read-only cassette's; nil otherwise

	// rules, when set, are how the tape's requests are served (a
	// session's); nil means the server's. stats, when set, counts what a
	// session's requests met.
	rules *tapeRules
	stats *sessionStats
}

// tapeRules are how the requests of a tape are served: the server's mode,
// exhaustion policy and matcher, or those a session asked for.
type tapeRules struct {
	mode      Mode
	exhausted Exhausted
	matcher   *match.Matcher
}

// newTape is the tape of the cassette at path, not yet open.
func newTape(path string) *tape { return &tape{name: path, opened: make(chan struct{})} }

// attach makes the tape use an open cassette, indexed by x (see
// openIndex), with a reply cache within budget when the cassette is
// read-only.
func (t *tape) attach(c *cassette.Cassette, x *cassette.Indexer, budget *cacheBudget) error {
	ix, err := openIndex(c, x)
	if err != nil {
		return fmt.Errorf("cassette %s: %w", t.name, err)
	}
	if c.ReadOnly() {
		n, err := c.Len()
		if err != nil {
			return fmt.Errorf("cassette %s: %w", t.name, err)
		}
		t.cache = newReplyCache(budget, n)
	}
	t.c, t.index, t.writer, t.plays = c, ix, &writeBehind{store: ix.append}, newPlays()
	return nil
}

// ready reports whether the tape's cassette is open.
func (t *tape) ready() bool {
	select {
	case <-t.opened:
		return t.openErr == nil
	default:
		return false
	}
}

// stop writes every interaction whose response has ended and ends the
// tape's writer, leaving the cassette open.
func (t *tape) stop() {
	if t.ready() {
		t.writer.close()
	}
}

// close stops the tape and closes its cassette once it is open; a tape
// still opening is closed by tapeSet.fill when it finds itself gone from
// the set.
func (t *tape) close() error {
	if !t.ready() {
		return nil
	}
	t.writer.close()
	t.cache.drop()
	return t.c.Close()
}
