package refresh_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/refresh"
)

// turn is the chat interaction of conversation conv's turn k (from 1),
// whose user prompts from turn from on carry variant v.
func turn(conv string, k int, v string, from int) *cassette.Interaction {
	msgs := []map[string]string{{"role": "user", "content": conv}}
	for j := 1; j < k; j++ {
		prompt := fmt.Sprintf("%s%d", conv, j+1)
		if j+1 >= from {
			prompt += v
		}
		answer := fmt.Sprintf("answer %s%d", conv, j)
		if j >= from {
			answer += v
		}
		msgs = append(msgs, map[string]string{"role": "assistant", "content": answer},
			map[string]string{"role": "user", "content": prompt})
	}
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs})
	return &cassette.Interaction{Kind: "openai-chat", Upstream: "openai", Request: cassette.Request{Method: "POST", Path: "/v1/chat/completions", Body: body},
		Response: cassette.Response{Status: 200, Body: cassette.Body(`{}`)}}
}

// build numbers the interactions 1..n, returns them with the last old id.
func build(old, fresh []*cassette.Interaction) (*cassette.Contents, uint64) {
	all := append(slices.Clone(old), fresh...)
	for n, i := range all {
		i.ID = uint64(n + 1)
	}
	return &cassette.Contents{Interactions: all}, uint64(len(old))
}

func conversation(conv string, turns int, v string, from int) []*cassette.Interaction {
	var out []*cassette.Interaction
	for k := 1; k <= turns; k++ {
		out = append(out, turn(conv, k, v, from))
	}
	return out
}

func usedSet(ids ...uint64) func(uint64) bool {
	return func(id uint64) bool { return slices.Contains(ids, id) }
}

// prompts is each interaction's conversation and last prompt, in order.
func prompts(p *refresh.Plan) string {
	var out []string
	for _, i := range p.Interactions {
		var b struct{ Messages []struct{ Content string } }
		json.Unmarshal(i.Request.Body, &b)
		out = append(out, b.Messages[len(b.Messages)-1].Content)
	}
	return strings.Join(out, " ")
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name        string
		old, fresh  []*cassette.Interaction
		used        []uint64
		prune       bool
		wantOrder   string
		wantChanges []string
		counts      [3]int // recorded, dropped, pruned
	}{{
		name:        "diverged at turn 2",
		old:         conversation("a", 5, "", 0),
		fresh:       conversation("a", 5, "'", 2)[1:],
		used:        []uint64{1, 6, 7, 8, 9},
		wantOrder:   "a a2' a3' a4' a5'",
		wantChanges: []string{"conversation 1 (interactions 1-5, 5 turns): kept 1 turn, re-recorded from turn 2 (4 turns), dropped 4"},
		counts:      [3]int{4, 4, 0},
	}, {
		name:      "two conversations diverging at once, interleaved",
		old:       append(conversation("a", 3, "", 0), conversation("b", 3, "", 0)...),
		fresh:     []*cassette.Interaction{turn("b", 3, "'", 3), turn("a", 2, "'", 2), turn("a", 3, "'", 2)},
		used:      []uint64{1, 4, 5, 7, 8, 9},
		wantOrder: "a a2' a3' b b2 b3'",
		wantChanges: []string{
			"conversation 1 (interactions 1-3, 3 turns): kept 1 turn, re-recorded from turn 2 (2 turns), dropped 2",
			"conversation 2 (interactions 4-6, 3 turns): kept 2 turns, re-recorded from turn 3 (1 turn), dropped 1",
		},
		counts: [3]int{3, 3, 0},
	}, {
		name:      "two branches of one conversation: the old turn 2 another request used stays",
		old:       conversation("a", 3, "", 0),
		fresh:     []*cassette.Interaction{turn("a", 2, "'", 2), turn("a", 3, "''", 3)},
		used:      []uint64{1, 2, 4, 5},
		wantOrder: "a a2' a2 a3''",
		wantChanges: []string{
			"conversation 1 (interactions 1-3, 3 turns): kept 1 turn, re-recorded from turn 2 (1 turn), dropped 1",
			"conversation 1 (interactions 1-3, 3 turns): kept 2 turns, re-recorded from turn 3 (1 turn), dropped 0",
		},
		counts: [3]int{2, 1, 0},
	}, {
		name:        "a first request that changed is a new conversation; the old one stays",
		old:         conversation("a", 2, "", 0),
		fresh:       conversation("z", 2, "", 0),
		used:        []uint64{3, 4},
		wantOrder:   "a a2 z z2",
		wantChanges: []string{"new conversation: recorded 2 turns (its first request matched no recording)"},
		counts:      [3]int{2, 0, 0},
	}, {
		name:        "--prune drops what no request used",
		old:         append(conversation("a", 2, "", 0), conversation("b", 2, "", 0)...),
		fresh:       conversation("z", 1, "", 0),
		used:        []uint64{1, 2, 5},
		prune:       true,
		wantOrder:   "a a2 z",
		wantChanges: []string{"conversation 2 (interactions 3-4, 2 turns): kept 0 turns, pruned 2 unused", "new conversation: recorded 1 turn (its first request matched no recording)"},
		counts:      [3]int{1, 0, 2},
	}, {
		name:      "everything replayed: nothing changes",
		old:       conversation("a", 2, "", 0),
		used:      []uint64{1, 2},
		wantOrder: "a a2",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ct, last := build(tc.old, tc.fresh)
			p := refresh.New(ct, last, usedSet(tc.used...), tc.prune)
			if got := prompts(p); got != tc.wantOrder {
				t.Errorf("order = %q, want %q", got, tc.wantOrder)
			}
			var changes []string
			for _, c := range p.Conversations {
				changes = append(changes, c.String())
			}
			if !slices.Equal(changes, tc.wantChanges) {
				t.Errorf("changes =\n%s\nwant\n%s", strings.Join(changes, "\n"), strings.Join(tc.wantChanges, "\n"))
			}
			if got := [3]int{p.Recorded, p.Dropped, p.Pruned}; got != tc.counts {
				t.Errorf("recorded, dropped, pruned = %v, want %v", got, tc.counts)
			}
			if p.Changed() != (tc.counts != [3]int{}) {
				t.Errorf("Changed() = %v", p.Changed())
			}
		})
	}
}
