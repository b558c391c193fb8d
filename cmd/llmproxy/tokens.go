package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/tally"
	"github.com/llmproxy/llmproxy/wire"
)

// tokenReport is `llmproxy report` as its JSON says it: the usage the
// recorded answers of one or more cassettes carry, and its cost.
type tokenReport struct {
	// Prices is the prices file given, "" for none.
	Prices string `json:"prices,omitempty"`
	// Cassettes are the cassettes read, in the order given (a directory's
	// in path order), each with its conversations.
	Cassettes []cassetteTokens `json:"cassettes"`
	// Models sums every cassette's answers per model.
	Models []tokenLine `json:"models"`
	Total  tokenLine   `json:"total"`
	// Unpriced names the models the prices file has no entry for ("" for
	// answers that name no model); absent without --prices.
	Unpriced []string `json:"unpriced,omitempty"`
}

// cassetteTokens is one cassette's sums. Test is the test it belongs to:
// its path under --cassette-dir without .cassette (the plugins keep one
// cassette per test, cassettes/<module>/<test>.cassette), or the path given.
//
// Interactions do not record the name of the session (§13) that recorded
// them; when they do, the per-test sums should come from it (tally.Answer
// is where it would be carried) rather than from the cassette's name.
type cassetteTokens struct {
	Cassette      string      `json:"cassette"`
	Test          string      `json:"test"`
	Conversations []tokenLine `json:"conversations"`
	Total         tokenLine   `json:"total"`
}

// tokenLine is a tally.Line as the report shows it.
type tokenLine struct {
	Model        string   `json:"model,omitempty"`
	Conversation string   `json:"conversation,omitempty"`
	Interactions []uint64 `json:"interactions,omitempty"`
	Requests     int      `json:"requests"`
	Input        int      `json:"input"`
	Cached       int      `json:"cached"`
	Output       int      `json:"output"`
	Reasoning    int      `json:"reasoning"`
	// Cost is the priced answers' cost; absent without --prices.
	// UnpricedRequests counts the answers it leaves out.
	Cost             *float64 `json:"cost,omitempty"`
	UnpricedRequests int      `json:"unpriced_requests,omitempty"`
}

func lineOf(l tally.Line, priced bool) tokenLine {
	t := tokenLine{Requests: l.Requests, Input: l.Usage.Input, Cached: l.Usage.Cached, Output: l.Usage.Output, Reasoning: l.Usage.Reasoning}
	if priced {
		c := l.Cost
		t.Cost, t.UnpricedRequests = &c, l.Unpriced
	}
	return t
}

// runTokens is `llmproxy report`.
func runTokens(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", stdout)
	var files listFlag
	fs.Var(&files, "cassette", "cassette `file` to sum (repeatable)")
	dir := fs.String("cassette-dir", "", "sum every *.cassette under this `directory` (each one test's, as the plugins keep them)")
	prices := fs.String("prices", "", "prices `file` (JSON or YAML: per model, input, output, cached, reasoning per million tokens) to cost the usage with")
	format := fs.String("format", "text", "output `format`: text or json")
	if err := parseCommand(fs, args); err != nil {
		return err
	}
	if (len(files) == 0) == (*dir == "") {
		return usagef("report: give --cassette FILE (repeatable) or --cassette-dir DIR (or %s, %s)", envName("cassette"), envName("cassette-dir"))
	}
	if *format != "text" && *format != "json" {
		return usagef("report: --format %q: want text or json", *format)
	}
	var ps tally.Prices
	if *prices != "" {
		var err error
		if ps, err = tally.LoadPrices(*prices); err != nil {
			return err
		}
	}
	tests, err := cassetteTests(files, *dir)
	if err != nil {
		return err
	}
	r, err := sumCassettes(tests, ps)
	if err != nil {
		return err
	}
	r.Prices = *prices
	if *format == "json" {
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(b, '\n'))
		return err
	}
	return r.writeText(stdout)
}

// cassetteTest is a cassette file and the test it belongs to.
type cassetteTest struct{ path, test string }

// cassetteTests lists the cassettes to sum: files as given, or every
// *.cassette under dir in path order.
func cassetteTests(files []string, dir string) ([]cassetteTest, error) {
	var out []cassetteTest
	for _, f := range files {
		out = append(out, cassetteTest{f, f})
	}
	if dir == "" {
		return out, nil
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && strings.HasSuffix(p, ".cassette") {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, cassetteTest{p, filepath.ToSlash(strings.TrimSuffix(rel, ".cassette"))})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("--cassette-dir %s: %w", dir, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--cassette-dir %s: no *.cassette file under it", dir)
	}
	return out, nil
}

// sumCassettes reads and sums each cassette, priced by ps when not nil.
func sumCassettes(tests []cassetteTest, ps tally.Prices) (*tokenReport, error) {
	r := &tokenReport{Cassettes: []cassetteTokens{}}
	var all []tally.Answer
	for _, t := range tests {
		answers, err := readAnswers(t.path)
		if err != nil {
			return nil, err
		}
		s := tally.Sum(answers, ps)
		ct := cassetteTokens{Cassette: t.path, Test: t.test, Conversations: []tokenLine{}, Total: lineOf(s.Total, ps != nil)}
		for _, g := range s.Conversations {
			l := lineOf(g.Line, ps != nil)
			l.Conversation, l.Interactions = g.Name, g.IDs
			ct.Conversations = append(ct.Conversations, l)
		}
		r.Cassettes = append(r.Cassettes, ct)
		all = append(all, answers...)
	}
	s := tally.Sum(all, ps)
	r.Models, r.Total, r.Unpriced = []tokenLine{}, lineOf(s.Total, ps != nil), s.Unpriced
	for _, g := range s.Models {
		l := lineOf(g.Line, ps != nil)
		l.Model = g.Name
		r.Models = append(r.Models, l)
	}
	return r, nil
}

// readAnswers reads what every answer of the cassette at path cost.
func readAnswers(path string) ([]tally.Answer, error) {
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return tally.Read(c)
}

// writeText writes the report as tables: per model, per test when there
// are several cassettes, and per conversation.
func (r *tokenReport) writeText(w io.Writer) error {
	head := "\tREQUESTS\tINPUT\tCACHED\tOUTPUT\tREASONING"
	if r.Prices != "" {
		head += "\tCOST"
	}
	var tw *tabwriter.Writer
	table := func(title string) {
		if tw != nil {
			tw.Flush()
			fmt.Fprintln(w)
		}
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, title)
	}
	row := func(name string, l tokenLine, extra ...string) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d", printable(name), l.Requests, l.Input, l.Cached, l.Output, l.Reasoning)
		if l.Cost != nil {
			fmt.Fprintf(tw, "\t%s", costText(*l.Cost, l.UnpricedRequests, l.Requests))
		}
		for _, e := range extra {
			fmt.Fprintf(tw, "\t%s", e)
		}
		fmt.Fprintln(tw)
	}
	table("MODEL" + head)
	for _, m := range r.Models {
		row(modelName(m.Model), m)
	}
	row("total", r.Total)
	if len(r.Cassettes) > 1 {
		table("TEST" + head)
		for _, c := range r.Cassettes {
			row(c.Test, c.Total)
		}
	}
	table("CONVERSATION" + head + "\tINTERACTIONS")
	for _, c := range r.Cassettes {
		for _, l := range c.Conversations {
			name := l.Conversation
			if len(r.Cassettes) > 1 {
				name = c.Test + " " + name
			}
			row(name, l, idRanges(l.Interactions))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Unpriced) > 0 {
		names := make([]string, len(r.Unpriced))
		for k, m := range r.Unpriced {
			names[k] = modelName(m)
		}
		_, err := fmt.Fprintf(w, "\nunpriced (no entry in %s): %s\n", printable(r.Prices), strings.Join(names, ", "))
		return err
	}
	return nil
}

// modelName shows a model's name; "(none named)" for answers that name
// none.
func modelName(m string) string {
	if m == "" {
		return "(none named)"
	}
	return printable(m)
}

// costText shows a cost with six decimals: "-" when no answer of the
// line was priced, a trailing "+" when some were not.
func costText(cost float64, unpriced, requests int) string {
	switch {
	case requests > 0 && unpriced == requests:
		return "-"
	case unpriced > 0:
		return strconv.FormatFloat(cost, 'f', 6, 64) + "+"
	}
	return strconv.FormatFloat(cost, 'f', 6, 64)
}

// idRanges shows ascending ids compactly: "1-3,5".
func idRanges(ids []uint64) string {
	var b strings.Builder
	for k := 0; k < len(ids); {
		j := k
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(ids[k], 10))
		if j > k {
			fmt.Fprintf(&b, "-%d", ids[j])
		}
		k = j + 1
	}
	return b.String()
}

// servedTokens is what a run served from cassettes: the requests and the
// tokens their recorded answers carry (what replay did not spend).
type servedTokens struct {
	Requests int `json:"requests"`
	Input    int `json:"input"`
	Cached   int `json:"cached"`
	Output   int `json:"output"`
	// Reasoning is part of Output.
	Reasoning int `json:"reasoning"`
}

func (s *servedTokens) add(u wire.Usage) {
	s.Requests++
	s.Input += u.Input
	s.Cached += u.Cached
	s.Output += u.Output
	s.Reasoning += u.Reasoning
}

// line is the wrapper's closing line: the requests served from cassettes
// and the tokens their answers carry.
func (s *servedTokens) line() string {
	return fmt.Sprintf("served %d request(s) from cassettes: %d tokens not spent (input %d, of which cached %d; output %d, of which reasoning %d)",
		s.Requests, s.Input+s.Output, s.Input, s.Cached, s.Output, s.Reasoning)
}
