package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/wire"
)

// runLs prints one line per interaction: id, provider, API kind, method,
// path, status, stream, the model that answered, its age, tool calls.
func runLs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ls", stdout)
	path := fs.String("cassette", "", "cassette `file` to list")
	if err := parseCommand(fs, args, "cassette"); err != nil {
		return err
	}
	c, err := cassette.Open(*path, cassette.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer c.Close()
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPROVIDER\tKIND\tMETHOD\tPATH\tSTATUS\tSTREAM\tMODEL\tAGE\tTOOL CALLS")
	now := time.Now()
	err = c.ForEach(func(i *cassette.Interaction) error {
		s := cassette.Summarize(i)
		provider := s.Provider
		if provider == "" {
			provider = "-"
		}
		stream := "no"
		if s.Stream {
			stream = i.Response.Framing
		}
		calls := make([]string, 0, len(s.ToolCalls))
		idless := map[string]int{}
		for _, tc := range s.ToolCalls {
			calls = append(calls, callLabel(tc, idless))
		}
		tools := "-"
		if len(calls) > 0 {
			tools = strings.Join(calls, "; ")
		}
		path := cassette.ProxyPath(s.Upstream, s.Path)
		model := s.Model
		if model == "" {
			model = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", s.ID, printable(provider), printable(s.Kind), printable(s.Method),
			printable(path), s.Status, printable(stream), printable(model), cassette.FormatAge(now.Sub(s.RecordedAt)), printable(tools))
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Flush()
}

// callLabel is a tool call on one line: name(arguments) id. Arguments are
// compacted (Gemini sends them pretty-printed, across lines). A call without
// an id on the wire (Gemini's usually) shows the key scrub and the wire
// package know it by, wire.SyntheticID: "#name#n".
func callLabel(tc cassette.ToolCall, idless map[string]int) string {
	args := []byte(tc.Arguments)
	var buf bytes.Buffer
	if json.Compact(&buf, args) == nil {
		args = buf.Bytes()
	}
	id := tc.ID
	if id == "" {
		idless[tc.Name]++
		id = wire.SyntheticID(tc.Name, idless[tc.Name])
	}
	return fmt.Sprintf("%s(%s) %s", tc.Name, args, id)
}

// printable shows a recorded field on a terminal: as it is when every rune
// of it prints, and otherwise quoted the way Go quotes a string, so that
// an escape sequence, a bidirectional override, a tab or a line end from a
// cassette is shown (\x1b, \u202e, \t, \n) and never acted upon.
func printable(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
