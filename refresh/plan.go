package refresh

import (
	"fmt"
	"hash/maphash"
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

// chat is what the plan reads of a chat interaction: its request, body
// and answer's Responses id; ok is false for any other interaction.
type chat struct {
	req    wire.Request
	body   []byte
	answer string
	ok     bool
}

func readChat(i *cassette.Interaction) chat {
	kind := wire.Kind(i.Kind)
	if !kind.CallsTools() {
		return chat{}
	}
	path := i.Request.Path
	if i.Request.Query != "" {
		path += "?" + i.Request.Query
	}
	c := chat{body: []byte(i.Request.Body)}
	req, err := wire.ParseRequest(kind, path, c.body)
	if err != nil {
		return chat{}
	}
	c.req, c.ok = req, true
	if a, err := wire.ParseResponse(kind, i.Response.WireFraming(), i.Response.Bytes()); err == nil {
		c.answer = a.ResponseID
	}
	return c
}

// oldConversations groups the old interactions into conversations by
// message history (cassette.Conversations); an interaction that is no
// chat request is a conversation of its own. It returns each one's place
// and each conversation's ids in turn order.
func oldConversations(olds []*cassette.Interaction) (map[uint64]turnOf, [][]uint64) {
	var threads cassette.Conversations
	var byThread []int
	place := map[uint64]turnOf{}
	var convIDs [][]uint64
	for _, i := range olds {
		at := turnOf{conv: len(convIDs)}
		if c := readChat(i); c.ok {
			t, turn := threads.Add(c.req, c.body, c.answer)
			if t == len(byThread) {
				byThread = append(byThread, len(convIDs))
			}
			at = turnOf{byThread[t], turn}
		}
		if at.conv == len(convIDs) {
			convIDs = append(convIDs, nil)
		}
		place[i.ID] = at
		convIDs[at.conv] = append(convIDs[at.conv], i.ID)
	}
	return place, convIDs
}

// parents finds, for each interaction the run recorded, the one it
// continues: among the old ones the run replayed and those it recorded
// before it, the request whose whole history its own begins with, the
// longest such (or the answer it names by previous_response_id); 0 for
// none.
type parents struct {
	seed     maphash.Seed
	byTurns  map[uint64]uint64 // the hash of a request's whole history → its id
	byAnswer map[string]uint64
}

func (ps *parents) add(i *cassette.Interaction) uint64 {
	if ps.byTurns == nil {
		ps.seed, ps.byTurns, ps.byAnswer = maphash.MakeSeed(), map[uint64]uint64{}, map[string]uint64{}
	}
	c := readChat(i)
	if !c.ok {
		return 0
	}
	hashes := cassette.TurnHashes(ps.seed, c.req, c.body)
	var parent uint64
	if c.req.Previous != "" {
		parent = ps.byAnswer[c.req.Previous]
	} else {
		for k := len(hashes) - 2; k >= 0 && parent == 0; k-- {
			parent = ps.byTurns[hashes[k]]
		}
	}
	if len(hashes) > 0 {
		ps.byTurns[hashes[len(hashes)-1]] = i.ID
	}
	if c.answer != "" {
		ps.byAnswer[c.answer] = i.ID
	}
	return parent
}

// New plans the refresh of a scratch copy's contents ct, whose
// interactions up to id last are the old ones and the later ones were
// recorded in the run. used tells the old interactions the run replayed
// whole; prune drops the old interactions no request used.
func New(ct *cassette.Contents, last uint64, used func(id uint64) bool, prune bool) *Plan {
	var olds, news []*cassette.Interaction
	for _, i := range ct.Interactions {
		if i.ID > last {
			news = append(news, i)
		} else {
			olds = append(olds, i)
		}
	}
	p := &Plan{Before: len(olds), Recorded: len(news)}
	place, convIDs := oldConversations(olds)
	pl := planning{used: used, dropped: map[uint64]bool{}, after: map[uint64][]*cassette.Interaction{}, touched: make([]bool, len(convIDs))}
	for _, b := range branchesOf(olds, news, last, used) {
		pl.supersede(p, b, place, convIDs)
	}
	if prune {
		pl.changes = p.prune(pl.changes, convIDs, used, pl.dropped, pl.touched)
	}
	for _, t := range pl.touched {
		if !t {
			p.Unchanged++
		}
	}
	slices.SortStableFunc(pl.changes, func(a, b Change) int {
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
	p.Conversations = pl.changes
	for _, i := range olds {
		if !pl.dropped[i.ID] {
			p.Interactions = append(p.Interactions, i)
		}
		p.Interactions = append(p.Interactions, pl.after[i.ID]...)
	}
	p.Interactions = append(p.Interactions, pl.tail...)
	return p
}

// A branch is a chain of interactions the run recorded, each continuing
// the one before, and the old interaction the first continues (0 for
// none: a conversation begun anew).
type branch struct {
	from  uint64
	turns []*cassette.Interaction
}

// branchesOf follows each recorded interaction to the one it continues,
// among the old ones the run replayed and those it recorded before it
// (see parents), and returns the chains in the order they began.
func branchesOf(olds, news []*cassette.Interaction, last uint64, used func(uint64) bool) []*branch {
	var ps parents
	for _, i := range olds {
		if used(i.ID) {
			ps.add(i)
		}
	}
	branchOf := map[uint64]int{} // recorded id → its branch
	var branches []*branch
	for _, i := range news {
		parent := ps.add(i)
		if b, ok := branchOf[parent]; ok && parent > last {
			branchOf[i.ID] = b
			branches[b].turns = append(branches[b].turns, i)
			continue
		}
		branchOf[i.ID] = len(branches)
		branches = append(branches, &branch{from: parent, turns: []*cassette.Interaction{i}})
	}
	return branches
}

// planning is what New gathers from the branches.
type planning struct {
	used    func(uint64) bool
	dropped map[uint64]bool
	after   map[uint64][]*cassette.Interaction // recorded turns to put after an old id
	tail    []*cassette.Interaction            // conversations begun anew
	touched []bool                             // by old conversation
	changes []Change
}

// supersede places a branch: after the old turn it continues, whose
// conversation's later turns no request used are dropped; or, begun
// anew, at the end.
func (pl *planning) supersede(p *Plan, b *branch, place map[uint64]turnOf, convIDs [][]uint64) {
	if b.from == 0 {
		pl.tail = append(pl.tail, b.turns...)
		pl.changes = append(pl.changes, Change{From: 1, Recorded: len(b.turns)})
		return
	}
	at := place[b.from]
	ids := convIDs[at.conv]
	c := Change{Conversation: at.conv + 1, First: ids[0], Last: ids[len(ids)-1], Turns: len(ids),
		Kept: at.turn + 1, From: at.turn + 2, Recorded: len(b.turns)}
	for _, id := range ids[at.turn+1:] {
		if !pl.used(id) && !pl.dropped[id] {
			pl.dropped[id] = true
			c.Dropped++
		}
	}
	p.Dropped += c.Dropped
	pl.after[b.from] = append(pl.after[b.from], b.turns...)
	pl.touched[at.conv] = true
	pl.changes = append(pl.changes, c)
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
