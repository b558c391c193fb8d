package refresh

import (
	"fmt"
	"io"
	"slices"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/wire"
)

// A Plan is the refreshed cassette and what changed in it.
type Plan struct {
	// Interactions are the refreshed cassette's, in their new order.
	Interactions []*cassette.Interaction
	// Conversations says, per conversation the run changed, what it did,
	// in the order of the old conversations, new ones last.
	Conversations []Change
	// Before and Unchanged count the old interactions and the old
	// conversations the run changed nothing of.
	Before, Unchanged int
	// Recorded, Dropped and Pruned count the interactions the run
	// recorded, the superseded ones dropped, and the unused ones pruned.
	Recorded, Dropped, Pruned int
}

// A Change is what a refresh did to one conversation (one branch of it,
// when the run diverged from it twice).
type Change struct {
	// Conversation is the old conversation's number, from 1 in the order
	// of their first interactions; 0 for a conversation the run began
	// anew. First and Last are its old interactions' first and last ids.
	Conversation int
	First, Last  uint64
	// Turns is how many turns the old conversation had.
	Turns int
	// Kept is how many of its turns were replayed before it diverged;
	// From is the turn (from 1) re-recorded first, 0 when none was;
	// Recorded is how many turns were recorded from there.
	Kept, From, Recorded int
	// Dropped counts the superseded turns dropped; Pruned the unused ones
	// dropped by --prune.
	Dropped, Pruned int
}

// Changed reports whether the plan rewrites the cassette.
func (p *Plan) Changed() bool { return p.Recorded+p.Dropped+p.Pruned > 0 }

// turnOf places one interaction in a grouping: its conversation and turn.
type turnOf struct{ conv, turn int }

// grouping groups interactions into conversations by message history; an
// interaction that is no chat request is a conversation of its own.
type grouping struct {
	threads  cassette.Conversations
	byThread []int // conversation by thread number
	n        int   // conversations so far
}

func (g *grouping) add(i *cassette.Interaction) turnOf {
	kind := wire.Kind(i.Kind)
	if kind.CallsTools() {
		path := i.Request.Path
		if i.Request.Query != "" {
			path += "?" + i.Request.Query
		}
		body := []byte(i.Request.Body)
		if req, err := wire.ParseRequest(kind, path, body); err == nil {
			var answer string
			if a, err := wire.ParseResponse(kind, i.Response.WireFraming(), i.Response.Bytes()); err == nil {
				answer = a.ResponseID
			}
			t, turn := g.threads.Add(req, body, answer)
			if t == len(g.byThread) {
				g.byThread = append(g.byThread, g.n)
				g.n++
			}
			return turnOf{g.byThread[t], turn}
		}
	}
	g.n++
	return turnOf{g.n - 1, 0}
}

// New plans the refresh of a scratch copy's contents ct, whose
// interactions up to id last are the old ones and the later ones were
// recorded in the run. used tells the old interactions the run replayed
// whole; prune drops the old interactions no request used.
func New(ct *cassette.Contents, last uint64, used func(id uint64) bool, prune bool) *Plan {
	p := &Plan{}
	var old grouping
	place := map[uint64]turnOf{} // old id → its old conversation and turn
	var convIDs [][]uint64       // old conversation → its ids, in turn order
	var olds, news []*cassette.Interaction
	for _, i := range ct.Interactions {
		if i.ID > last {
			news = append(news, i)
			continue
		}
		olds = append(olds, i)
		at := old.add(i)
		place[i.ID] = at
		if at.conv == len(convIDs) {
			convIDs = append(convIDs, nil)
		}
		convIDs[at.conv] = append(convIDs[at.conv], i.ID)
	}
	p.Before, p.Recorded = len(olds), len(news)

	// The run's conversations: what it replayed, then what it recorded.
	var run grouping
	var groups [][]*cassette.Interaction
	for _, i := range olds {
		if used(i.ID) {
			groups = addTo(groups, run.add(i), i)
		}
	}
	for _, i := range news {
		groups = addTo(groups, run.add(i), i)
	}

	dropped := map[uint64]bool{}
	after := map[uint64][]*cassette.Interaction{} // new turns to put after an old id
	var tail []*cassette.Interaction
	touched := make([]bool, len(convIDs))
	var changes []Change
	for _, g := range groups {
		k := slices.IndexFunc(g, func(i *cassette.Interaction) bool { return i.ID > last })
		if k < 0 {
			continue // replayed only
		}
		fresh := g[k:]
		if k == 0 {
			tail = append(tail, fresh...)
			changes = append(changes, Change{From: 1, Recorded: len(fresh)})
			continue
		}
		at := place[g[k-1].ID]
		ids := convIDs[at.conv]
		c := Change{Conversation: at.conv + 1, First: ids[0], Last: ids[len(ids)-1], Turns: len(ids),
			Kept: at.turn + 1, From: at.turn + 2, Recorded: len(fresh)}
		for _, id := range ids[at.turn+1:] {
			if !used(id) && !dropped[id] {
				dropped[id] = true
				c.Dropped++
			}
		}
		p.Dropped += c.Dropped
		after[g[k-1].ID] = append(after[g[k-1].ID], fresh...)
		touched[at.conv] = true
		changes = append(changes, c)
	}
	if prune {
		changes = p.prune(changes, convIDs, used, dropped, touched)
	}
	for _, t := range touched {
		if !t {
			p.Unchanged++
		}
	}
	slices.SortStableFunc(changes, func(a, b Change) int {
		switch {
		case a.Conversation == b.Conversation:
			return 0
		case a.Conversation == 0:
			return 1
		case b.Conversation == 0:
			return -1
		}
		return a.Conversation - b.Conversation
	})
	p.Conversations = changes
	for _, i := range olds {
		if !dropped[i.ID] {
			p.Interactions = append(p.Interactions, i)
		}
		p.Interactions = append(p.Interactions, after[i.ID]...)
	}
	p.Interactions = append(p.Interactions, tail...)
	return p
}

// prune drops the old interactions no request used and not dropped yet,
// counting them on their conversation's change (a new one when the run
// changed nothing else of it).
func (p *Plan) prune(changes []Change, convIDs [][]uint64, used func(uint64) bool, dropped map[uint64]bool, touched []bool) []Change {
	for conv, ids := range convIDs {
		n := 0
		for _, id := range ids {
			if !used(id) && !dropped[id] {
				dropped[id] = true
				n++
			}
		}
		if n == 0 {
			continue
		}
		p.Pruned += n
		touched[conv] = true
		k := slices.IndexFunc(changes, func(c Change) bool { return c.Conversation == conv+1 })
		if k < 0 {
			kept := len(ids) - n
			changes = append(changes, Change{Conversation: conv + 1, First: ids[0], Last: ids[len(ids)-1], Turns: len(ids), Kept: kept})
			k = len(changes) - 1
		}
		changes[k].Pruned += n
	}
	return changes
}

func addTo(groups [][]*cassette.Interaction, at turnOf, i *cassette.Interaction) [][]*cassette.Interaction {
	for len(groups) <= at.conv {
		groups = append(groups, nil)
	}
	groups[at.conv] = append(groups[at.conv], i)
	return groups
}

// Summary writes the plan for a person: a line for the cassette, then one
// per conversation the run changed.
func (p *Plan) Summary(w io.Writer, path string) {
	if !p.Changed() {
		fmt.Fprintf(w, "llmproxy: refresh %s: every request replayed; nothing re-recorded, the cassette is unchanged\n", path)
		return
	}
	fmt.Fprintf(w, "llmproxy: refresh %s: %s recorded, %s dropped as superseded, %s pruned; %s unchanged; %d interactions, were %d\n",
		path, plural(p.Recorded, "interaction"), plural(p.Dropped, "interaction"), plural(p.Pruned, "interaction"),
		plural(p.Unchanged, "conversation"), len(p.Interactions), p.Before)
	for _, c := range p.Conversations {
		fmt.Fprintf(w, "  %s\n", c)
	}
}

// String is the change's summary line.
func (c Change) String() string {
	if c.Conversation == 0 {
		return fmt.Sprintf("new conversation: recorded %s (its first request matched no recording)", plural(c.Recorded, "turn"))
	}
	s := fmt.Sprintf("conversation %d (interactions %d-%d, %s): kept %s", c.Conversation, c.First, c.Last, plural(c.Turns, "turn"), plural(c.Kept, "turn"))
	if c.From > 0 {
		s += fmt.Sprintf(", re-recorded from turn %d (%s), dropped %d", c.From, plural(c.Recorded, "turn"), c.Dropped)
	}
	if c.Pruned > 0 {
		s += fmt.Sprintf(", pruned %d unused", c.Pruned)
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}
