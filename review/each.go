package review

import "fmt"

// Conversation is a conversation that differs, as Each gives it.
type Conversation struct {
	// Title is its first user text (else its route), shortened.
	Title string `json:"title"`
	// Old and New are its numbers in each cassette, from 1 in order of
	// first request; 0 where it is absent.
	Old   int   `json:"old"`
	New   int   `json:"new"`
	Class Class `json:"class"`
	// Turns are its turns that differ (all of them for an added or
	// removed conversation).
	Turns []Turn `json:"turns"`
}

// Turn is a turn that differs.
type Turn struct {
	// Turn counts from 1 within the conversation.
	Turn int `json:"turn"`
	// OldID and NewID are the interactions' ids; 0 where absent.
	OldID uint64 `json:"old_id,omitempty"`
	NewID uint64 `json:"new_id,omitempty"`
	Class Class  `json:"class"`
	// Differences is empty for a turn added or removed.
	Differences []Difference `json:"differences,omitempty"`
}

// titleLimit is how many runes of a title are shown.
const titleLimit = 72

// Each calls fn with each conversation that differs, in NEW's order, then
// those only OLD holds, reading each differing pair again. It stops at
// fn's first error, which it returns.
func (r *Review) Each(fn func(Conversation) error) error {
	for _, p := range r.pairs {
		if p.class == Identical {
			continue
		}
		c, err := r.detail(p)
		if err != nil {
			return err
		}
		if err := fn(c); err != nil {
			return err
		}
	}
	return nil
}

// detail builds a pairing's Conversation.
func (r *Review) detail(p *pairing) (Conversation, error) {
	c := Conversation{Class: p.class}
	first := p.new
	if first == nil {
		first = p.old
	}
	src := r.new
	if p.new == nil {
		src = r.old
	}
	i, err := src.Get(first.turns[0].id)
	if err != nil {
		return c, fmt.Errorf("cassette %s: interaction %d: %w", src.Path(), first.turns[0].id, err)
	}
	c.Title = short(oneLine(read(i).title()), titleLimit)
	var olds, news []digested
	if p.old != nil {
		c.Old, olds = p.old.number, p.old.turns
	}
	if p.new != nil {
		c.New, news = p.new.number, p.new.turns
	}
	for k := range max(len(olds), len(news)) {
		t := Turn{Turn: k + 1}
		switch {
		case k >= len(olds):
			t.NewID, t.Class = news[k].id, Added
		case k >= len(news):
			t.OldID, t.Class = olds[k].id, Removed
		default:
			t.OldID, t.NewID, t.Class = olds[k].id, news[k].id, p.turns[k]
			if t.Class == Identical {
				continue
			}
			if t.Differences, err = r.compare(olds[k], news[k]); err != nil {
				return c, err
			}
		}
		c.Turns = append(c.Turns, t)
	}
	return c, nil
}

// oneLine folds a text's line breaks and tabs into spaces.
func oneLine(s string) string {
	b := []byte(s)
	for k, ch := range b {
		if ch == '\n' || ch == '\r' || ch == '\t' {
			b[k] = ' '
		}
	}
	return string(b)
}
