package tally

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

func TestLoadPrices(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	yamlFile := write("prices.yaml", "gpt-4o-mini: {input: 0.15, output: 0.6, cached: 0.075}\nclaude-sonnet-4-6:\n  input: 3\n  output: 15\n  reasoning: 15\n")
	jsonFile := write("prices.json", `{"gpt-4o-mini": {"input": 0.15, "output": 0.6, "cached": 0.075}, "claude-sonnet-4-6": {"input": 3, "output": 15, "reasoning": 15}}`)
	for _, p := range []string{yamlFile, jsonFile} {
		ps, err := LoadPrices(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if got := ps.For("gpt-4o-mini-2024-07-18"); got == nil || got.Input != 0.15 || got.Cached == nil || *got.Cached != 0.075 {
			t.Errorf("%s: gpt-4o-mini snapshot priced %+v", p, got)
		}
		if got := ps.For("claude-sonnet-4-6"); got == nil || got.Output != 15 || got.Cached != nil {
			t.Errorf("%s: claude priced %+v", p, got)
		}
		if got := ps.For("gpt-4o"); got != nil {
			t.Errorf("%s: gpt-4o priced %+v by another model's entry", p, got)
		}
	}
}

func TestLoadPricesBad(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"negative", "gpt-4o:\n  input: 2.5\n  output: -10\n", "p:3: gpt-4o.output: -10 is negative"},
		{"string", `{"gpt-4o": {"input": "2.5", "output": 10}}`, `p:1: gpt-4o.input: "2.5" is not a number`},
		{"nan", "m: {input: .nan, output: 1}\n", `p:1: m.input: ".nan" is not a finite number`},
		{"missing output", "m: {input: 1}\n", "p:1: m: no output price"},
		{"unknown key", "m: {input: 1, output: 2, cache: 0.5}\n", "p:1: m.cache: unknown key"},
		{"model twice", "m: {input: 1, output: 2}\nm: {input: 1, output: 2}\n", "p:2: m: model named twice"},
		{"not a mapping", "- m\n", "p:1: want a mapping from model name to prices, got a list"},
		{"entry not a mapping", "m: 3\n", "p:1: m: want a mapping"},
		{"malformed json", `{"m": {"input": 1,`, "p: yaml:"},
		{"malformed yaml", "m: {input: 1\n  output: [\n", "p: yaml:"},
		{"empty", "", "p: empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parsePrices("p", []byte(tt.text))
			if !errors.Is(err, ErrPrices) {
				t.Fatalf("error %v, want ErrPrices", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\nwant it to say %q", err, tt.want)
			}
		})
	}
	// Every problem at once.
	_, err := parsePrices("p", []byte("a: {input: -1, output: x}\nb: {input: 1}\n"))
	for _, want := range []string{"p:1: a.input: -1 is negative", `p:1: a.output: "x" is not a number`, "p:2: b: no output price"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nwant it to say %q", err, want)
		}
	}
	if _, err := LoadPrices(filepath.Join(t.TempDir(), "none.yaml")); err == nil || !strings.Contains(err.Error(), "none.yaml") {
		t.Errorf("missing file: error %v, want one naming it", err)
	}
}

func TestCost(t *testing.T) {
	cached, reasoning := 0.5, 20.0
	p := Price{Input: 2, Output: 10, Cached: &cached, Reasoning: &reasoning}
	u := wire.Usage{Input: 1_000_000, Cached: 400_000, Output: 300_000, Reasoning: 100_000}
	// 600k*2 + 400k*0.5 + 200k*10 + 100k*20, per million
	if got, want := p.Cost(u), 1.2+0.2+2+2; !near(got, want) {
		t.Errorf("cost %v, want %v", got, want)
	}
	plain := Price{Input: 2, Output: 10}
	if got, want := plain.Cost(u), 2+3.0; !near(got, want) {
		t.Errorf("cost without cached and reasoning prices %v, want %v", got, want)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestSumUnpriced(t *testing.T) {
	ps := Prices{"gpt-4o-mini": {Input: 1, Output: 2}}
	answers := []Answer{
		{ID: 1, Model: "gpt-4o-mini-2024-07-18", Conversation: 1, Turn: 1, Usage: wire.Usage{Input: 1_000_000, Output: 500_000}},
		{ID: 2, Model: "mystery-1", Conversation: 1, Turn: 2, Usage: wire.Usage{Input: 10, Output: 5}},
		{ID: 3, Model: "", Usage: wire.Usage{}},
	}
	s := Sum(answers, ps)
	if got := strings.Join(s.Unpriced, ","); got != ",mystery-1" {
		t.Errorf("unpriced %q, want \",mystery-1\"", got)
	}
	if s.Total.Requests != 3 || s.Total.Unpriced != 2 || !near(s.Total.Cost, 2) {
		t.Errorf("total %+v, want 3 requests, 2 unpriced, cost 2", s.Total)
	}
	if len(s.Conversations) != 2 || s.Conversations[1].Name != "-" || s.Conversations[0].Requests != 2 {
		t.Errorf("conversations %+v", s.Conversations)
	}
	if s := Sum(answers, nil); s.Unpriced != nil || s.Total.Cost != 0 {
		t.Errorf("without prices: %+v", s)
	}
}
