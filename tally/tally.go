// Package tally sums the token usage that recorded answers carry — per
// model, per conversation and per cassette (a test's, under the plugins'
// one-cassette-per-test layout) — and prices it from a table the user
// keeps (see LoadPrices): what `llmproxy report` and a run's report show,
// and so what replaying a cassette did not spend.
//
// The counts are what each provider wrote in its answer, read by package
// wire (wire.Usage): nothing is estimated. An answer without usage (an
// error, generic HTTP, a chat stream recorded without
// stream_options.include_usage) counts as a request with no tokens.
package tally

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/wire"
)

// Answer is what one recorded interaction's answer cost.
type Answer struct {
	// ID is the interaction's id.
	ID uint64
	// Model is the model the provider said answered, else the model the
	// request asked for, else "".
	Model string
	// Conversation numbers the interaction's conversation in its cassette,
	// from 1, as cassette.Conversations groups them; Turn is its request's turn in
	// it, from 1. Both are 0 for an interaction that is no conversation
	// (embeddings, generic HTTP, a request wire cannot read).
	Conversation, Turn int
	// Usage is the answer's token counts.
	Usage wire.Usage
}

// Of reads what one interaction's answer cost, leaving its conversation
// unset.
func Of(i *cassette.Interaction) Answer {
	a, _, _, _ := read(i)
	return a
}

// read reads an interaction's answer, with its request as wire parses it
// (and the error doing so) and its response.
func read(i *cassette.Interaction) (Answer, wire.Request, wire.Response, error) {
	a := Answer{ID: i.ID}
	kind := wire.Kind(i.Kind)
	path := i.Request.Path
	if i.Request.Query != "" {
		path += "?" + i.Request.Query
	}
	req, reqErr := wire.ParseRequest(kind, path, i.Request.Body)
	// A body cut short still gives what it carried before the cut.
	resp, _ := wire.ParseResponse(kind, i.Response.WireFraming(), i.Response.Bytes())
	a.Usage, a.Model = resp.Usage, resp.Model
	if a.Model == "" && reqErr == nil {
		a.Model = req.Model
	}
	return a, req, resp, reqErr
}

// Read reads what every answer of c cost, in recorded order, each with its
// conversation and turn.
func Read(c *cassette.Cassette) ([]Answer, error) {
	var out []Answer
	var convs cassette.Conversations
	err := c.ForEach(func(i *cassette.Interaction) error {
		a, req, resp, err := read(i)
		if err == nil && wire.Kind(i.Kind).CallsTools() {
			n, turn := convs.Add(req, i.Request.Body, resp.ResponseID)
			a.Conversation, a.Turn = n+1, turn+1
		}
		out = append(out, a)
		return nil
	})
	return out, err
}

// Line is the sum of a group of answers.
type Line struct {
	// Requests counts the answers, with usage or not.
	Requests int
	Usage    wire.Usage
	// Cost is the price of the priced answers' usage, in the prices'
	// currency; Unpriced counts the answers whose model the prices have
	// no entry for (all of them without prices).
	Cost     float64
	Unpriced int
}

// add counts one answer in the line, priced at p (nil: unpriced).
func (l *Line) add(a Answer, p *Price) {
	l.Requests++
	l.Usage = l.Usage.Add(a.Usage)
	if p == nil {
		l.Unpriced++
		return
	}
	l.Cost += p.Cost(a.Usage)
}

// Group is a named Line: a model or a conversation.
type Group struct {
	Name string
	// IDs are a conversation's interactions, in recorded order (nil for
	// a model).
	IDs []uint64
	Line
}

// Sums is a cassette's (or several cassettes') answers summed.
type Sums struct {
	// Models are the sums per model, by name; "" is answers that name no
	// model.
	Models []Group
	// Conversations are the sums per conversation, in the order they began
	// ("1", "2", …), then "-" for the answers that are no conversation.
	Conversations []Group
	// Total sums every answer.
	Total Line
	// Unpriced names the models the prices have no entry for (nil without
	// prices).
	Unpriced []string
}

// Sum adds up answers, priced by prices when it is not nil.
func Sum(answers []Answer, prices Prices) Sums {
	var s Sums
	models := map[string]*Line{}
	convs := map[int]*Group{}
	unpriced := map[string]bool{}
	priced := prices != nil
	for _, a := range answers {
		var p *Price
		if priced {
			if p = prices.For(a.Model); p == nil {
				unpriced[a.Model] = true
			}
		}
		if models[a.Model] == nil {
			models[a.Model] = &Line{}
		}
		models[a.Model].add(a, p)
		g := convs[a.Conversation]
		if g == nil {
			g = &Group{Name: fmt.Sprint(a.Conversation)}
			if a.Conversation == 0 {
				g.Name = "-"
			}
			convs[a.Conversation] = g
		}
		g.IDs = append(g.IDs, a.ID)
		g.add(a, p)
		s.Total.add(a, p)
	}
	for name, l := range models {
		s.Models = append(s.Models, Group{Name: name, Line: *l})
	}
	slices.SortFunc(s.Models, func(a, b Group) int { return cmp.Compare(a.Name, b.Name) })
	nums := make([]int, 0, len(convs))
	for n := range convs {
		nums = append(nums, n)
	}
	// The answers that are no conversation ("-") come last.
	slices.SortFunc(nums, func(a, b int) int { return cmp.Compare(uint(a-1), uint(b-1)) })
	for _, n := range nums {
		s.Conversations = append(s.Conversations, *convs[n])
	}
	if priced {
		s.Unpriced = []string{}
		for m := range unpriced {
			s.Unpriced = append(s.Unpriced, m)
		}
		slices.Sort(s.Unpriced)
	}
	return s
}
