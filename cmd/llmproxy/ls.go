package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/proxy"
)

// runLs prints one line per interaction: id, provider, API kind, method,
// path, status, stream, tool calls.
func runLs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ls", stderr)
	path := fs.String("cassette", "", "cassette `file` to list")
	if err := parseFlags(fs, args, nil); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if err := requireFlag(fs, "cassette", *path); err != nil {
		return err
	}
	c, err := cassette.Open(*path, cassette.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer c.Close()
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPROVIDER\tKIND\tMETHOD\tPATH\tSTATUS\tSTREAM\tTOOL CALLS")
	err = c.ForEach(func(i *cassette.Interaction) error {
		s := proxy.Summarize(i)
		provider := s.Provider
		if provider == "" {
			provider = "-"
		}
		stream := "no"
		if s.Stream {
			stream = i.Response.Framing
		}
		calls := make([]string, 0, len(s.ToolCalls))
		for _, tc := range s.ToolCalls {
			calls = append(calls, fmt.Sprintf("%s(%s) %s", tc.Name, tc.Arguments, tc.ID))
		}
		tools := "-"
		if len(calls) > 0 {
			tools = strings.Join(calls, "; ")
		}
		path := s.Path
		if s.Upstream != proxy.DefaultUpstreamName {
			path = "/" + s.Upstream + s.Path
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", s.ID, provider, s.Kind, s.Method, path, s.Status, stream, tools)
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Flush()
}
