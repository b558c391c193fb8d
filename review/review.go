package review

import (
	"context"
	"fmt"
	"hash/maphash"

	"github.com/llmproxy/llmproxy/cassette"
)

// Class is what kind of change a difference, a turn or a conversation is.
type Class string

// The classes, from the least severe; see the package doc.
const (
	Identical Class = "identical"
	Wording   Class = "wording"
	Request   Class = "request"
	Behaviour Class = "behaviour"
	// Added is a conversation or turn only NEW holds; Removed one only OLD
	// holds. A turn added to or removed from a paired conversation is a
	// behaviour difference of that conversation.
	Added   Class = "added"
	Removed Class = "removed"
)

// rank orders classes by severity.
func (c Class) rank() int {
	switch c {
	case Wording:
		return 1
	case Request:
		return 2
	case Behaviour:
		return 3
	case Added, Removed:
		return 4
	}
	return 0
}

// worse is the more severe of two classes.
func worse(a, b Class) Class {
	if b.rank() > a.rank() {
		return b
	}
	return a
}

// Counts counts conversations or turns by class.
type Counts struct {
	Identical int `json:"identical"`
	Wording   int `json:"wording"`
	Request   int `json:"request"`
	Behaviour int `json:"behaviour"`
	Added     int `json:"added"`
	Removed   int `json:"removed"`
}

func (n *Counts) add(c Class) {
	switch c {
	case Identical:
		n.Identical++
	case Wording:
		n.Wording++
	case Request:
		n.Request++
	case Behaviour:
		n.Behaviour++
	case Added:
		n.Added++
	case Removed:
		n.Removed++
	}
}

// Total is the sum of the counts.
func (n Counts) Total() int {
	return n.Identical + n.Wording + n.Request + n.Behaviour + n.Added + n.Removed
}

// Changes counts differences by class.
type Changes struct {
	Wording   int `json:"wording"`
	Request   int `json:"request"`
	Behaviour int `json:"behaviour"`
	Added     int `json:"added"`
	Removed   int `json:"removed"`
}

// counts is c as Counts, with no identical ones.
func (c Changes) counts() Counts {
	return Counts{Wording: c.Wording, Request: c.Request, Behaviour: c.Behaviour, Added: c.Added, Removed: c.Removed}
}

// Total is the number of differences.
func (c Changes) Total() int { return c.counts().Total() }

func (c *Changes) add(cl Class) {
	n := c.counts()
	n.add(cl)
	*c = Changes{Wording: n.Wording, Request: n.Request, Behaviour: n.Behaviour, Added: n.Added, Removed: n.Removed}
}

// Summary is what a review found: conversations and turns by class, and
// the differences by class (a turn added to or removed from a paired
// conversation counts as a behaviour difference, a whole conversation
// added or removed as one added or removed difference).
type Summary struct {
	Conversations Counts  `json:"conversations"`
	Turns         Counts  `json:"turns"`
	Differences   Changes `json:"differences"`
}

// Identical reports whether the review found no difference at all.
func (s Summary) Identical() bool { return s.Differences.Total() == 0 }

// Gate is a set of classes that fail a review (--fail-on).
type Gate string

// The gates: GateBehaviour fails on a behaviour difference (a turn added or
// removed included); GateWording also on a wording difference; GateAny on
// every difference, request side and whole conversations added or removed
// included.
const (
	GateBehaviour Gate = "behaviour"
	GateWording   Gate = "wording"
	GateAny       Gate = "any"
)

// ParseGate reads a gate's name.
func ParseGate(s string) (Gate, error) {
	switch g := Gate(s); g {
	case GateBehaviour, GateWording, GateAny:
		return g, nil
	}
	return "", fmt.Errorf("%q is not behaviour, wording or any", s)
}

// Fails reports whether the summary has a difference the gate counts.
func (s Summary) Fails(g Gate) bool {
	d := s.Differences
	switch g {
	case GateBehaviour:
		return d.Behaviour > 0
	case GateWording:
		return d.Behaviour+d.Wording > 0
	}
	return !s.Identical()
}

// Review is two cassettes, grouped and paired, with each pair classed.
type Review struct {
	old, new *cassette.Cassette
	seed     maphash.Seed
	pairs    []*pairing
	summary  Summary
}

// pairing is a conversation of OLD, of NEW, or both; turns by position.
type pairing struct {
	old, new *conv // nil when absent
	class    Class
	turns    []Class // each paired turn's class; turns beyond the shorter side are added or removed
}

// conv is a conversation of one cassette, as the first pass keeps it.
type conv struct {
	number int    // from 1, in order of first request
	key    uint64 // the opening (reading.firstUser)
	setup  uint64 // the opening's setup (reading.setup)
	turns  []digested
}

// digested is one turn: the interaction's id and digest.
type digested struct {
	id     uint64
	digest uint64
}

// New reads both cassettes once, groups and pairs their conversations and
// classes every pair, reading again only the pairs whose digests differ.
// Errors name the cassette and interaction at fault.
func New(ctx context.Context, old, new *cassette.Cassette) (*Review, error) {
	r := &Review{old: old, new: new, seed: maphash.MakeSeed()}
	olds, err := r.scan(ctx, old)
	if err != nil {
		return nil, err
	}
	news, err := r.scan(ctx, new)
	if err != nil {
		return nil, err
	}
	r.pairs = pair(olds, news)
	for _, p := range r.pairs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := r.classify(p); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Summary is what the review found.
func (r *Review) Summary() Summary { return r.summary }

// scan groups a cassette's interactions into conversations and digests
// each.
func (r *Review) scan(ctx context.Context, c *cassette.Cassette) ([]*conv, error) {
	var convs []*conv
	var threads cassette.Conversations
	var byThread []int // conversation by thread number
	err := c.ForEach(func(i *cassette.Interaction) error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("cassette %s: %w", c.Path(), err)
		}
		rd := read(i)
		d := digested{id: i.ID, digest: rd.digest(r.seed)}
		n := -1
		if rd.chat {
			t, _ := threads.Add(rd.req, []byte(i.Request.Body), rd.responseID)
			if t < len(byThread) {
				n = byThread[t]
			} else {
				byThread = append(byThread, len(convs))
			}
		}
		if n < 0 {
			n = len(convs)
			kind := []byte(rd.kind + "\x00")
			convs = append(convs, &conv{number: n + 1,
				key:   maphash.Bytes(r.seed, append(kind, rd.firstUser()...)),
				setup: maphash.Bytes(r.seed, append(kind, rd.setup()...))})
		}
		convs[n].turns = append(convs[n].turns, d)
		return nil
	})
	if err != nil {
		return nil, err // naming the cassette, and the interaction at fault
	}
	return convs, nil
}

// pair pairs conversations: NEW's with OLD's of the same opening, the k-th
// with the k-th; then the rest in order, on the same API kind and setup
// (an opening prompt that changed); what remains is added or removed.
// The pairs come in NEW's order, then the removed ones in OLD's.
func pair(olds, news []*conv) []*pairing {
	byKey := map[uint64][]*conv{}
	for _, c := range olds {
		byKey[c.key] = append(byKey[c.key], c)
	}
	taken := map[*conv]bool{}
	out := make([]*pairing, len(news))
	for n, c := range news {
		out[n] = &pairing{new: c}
		if q := byKey[c.key]; len(q) > 0 {
			out[n].old, byKey[c.key] = q[0], q[1:]
			taken[q[0]] = true
		}
	}
	bySetup := map[uint64][]*conv{}
	for _, c := range olds {
		if !taken[c] {
			bySetup[c.setup] = append(bySetup[c.setup], c)
		}
	}
	for _, p := range out {
		if q := bySetup[p.new.setup]; p.old == nil && len(q) > 0 {
			p.old, bySetup[p.new.setup] = q[0], q[1:]
			taken[q[0]] = true
		}
	}
	for _, c := range olds {
		if !taken[c] {
			out = append(out, &pairing{old: c})
		}
	}
	return out
}

// classify classes a pairing's turns and the pairing, and counts them.
func (r *Review) classify(p *pairing) error {
	s := &r.summary
	switch {
	case p.old == nil:
		p.class = Added
		s.Turns.Added += len(p.new.turns)
		s.Differences.Added++
	case p.new == nil:
		p.class = Removed
		s.Turns.Removed += len(p.old.turns)
		s.Differences.Removed++
	default:
		p.class = Identical
		n := min(len(p.old.turns), len(p.new.turns))
		p.turns = make([]Class, n)
		for k := range n {
			diffs, err := r.compare(p.old.turns[k], p.new.turns[k])
			if err != nil {
				return err
			}
			c := Identical
			for _, d := range diffs {
				c = worse(c, d.Class)
				s.Differences.add(d.Class)
			}
			p.turns[k] = c
			p.class = worse(p.class, c)
			s.Turns.add(c)
		}
		if extra := len(p.new.turns) - n; extra > 0 {
			s.Turns.Added += extra
			s.Differences.Behaviour += extra
			p.class = Behaviour
		}
		if extra := len(p.old.turns) - n; extra > 0 {
			s.Turns.Removed += extra
			s.Differences.Behaviour += extra
			p.class = Behaviour
		}
	}
	s.Conversations.add(p.class)
	return nil
}

// compare reads a pair of turns again and returns their differences; none
// when their digests are equal.
func (r *Review) compare(o, n digested) ([]Difference, error) {
	if o.digest == n.digest {
		return nil, nil
	}
	oi, err := r.old.Get(o.id)
	if err != nil {
		return nil, fmt.Errorf("cassette %s: interaction %d: %w", r.old.Path(), o.id, err)
	}
	ni, err := r.new.Get(n.id)
	if err != nil {
		return nil, fmt.Errorf("cassette %s: interaction %d: %w", r.new.Path(), n.id, err)
	}
	return differences(read(oi), read(ni)), nil
}
