package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/fixture"
)

// runScrub rewrites the tool rounds of a cassette into preset fixtures
// (docs/scrub.md): the flags, and the report of what fixture.ScrubFile did.
func runScrub(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("scrub", stdout)
	path := fs.String("cassette", "", "cassette `file` to scrub (rewritten in place unless --out is given)")
	var mapSpecs listFlag
	fs.Var(&mapSpecs, "map", "substitute an application tool as a preset: `TOOL=PRESET`, or SERVER.TOOL=PRESET for an MCP server's tool (repeatable)")
	out := fs.String("out", "", "write the scrubbed cassette to `file` and leave --cassette as it is")
	strict := fs.Bool("strict", false, "fail, writing nothing, when a call to a preset is left unchanged")
	if err := parseCommand(fs, args, "cassette"); err != nil {
		return err
	}
	mapping, err := fixture.ParseMapping(mapSpecs)
	if err != nil {
		return usagef("scrub: --map: %v", err)
	}
	x, err := cassette.DefaultIndexer()
	if err != nil {
		return err
	}
	res, err := fixture.ScrubFile(ctx, *path, fixture.ScrubOptions{
		Map: mapping, Out: *out, Strict: *strict,
		Indexer: x, Version: version,
	})
	if res != nil {
		printReport(stdout, *path, res.Report)
	}
	switch {
	case errors.Is(err, fixture.ErrStrict):
		return fmt.Errorf("%w (--strict)", err)
	case err != nil:
		return err
	case res.Written == "":
		fmt.Fprintf(stdout, "nothing to change in %s\n", *path)
	case *out != "":
		fmt.Fprintf(stdout, "wrote %s\n", *out)
	default:
		fmt.Fprintf(stdout, "rewrote %s\n", *path)
	}
	return nil
}

// printReport writes what a scrub did: the calls substituted per preset,
// then each call left unchanged with where and why.
func printReport(w io.Writer, path string, r fixture.Report) {
	fmt.Fprintf(w, "scrub %s: %d tool call(s) substituted, %d left unchanged\n", path, len(r.Substituted), len(r.Skipped))
	if len(r.Substituted) > 0 {
		ids := map[string][]string{}
		for _, s := range r.Substituted {
			id := s.NewID
			if s.MCP != 0 {
				id += fmt.Sprintf(" (and MCP interaction %d)", s.MCP)
			}
			ids[s.Preset] = append(ids[s.Preset], id)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, p := range slices.Sorted(maps.Keys(ids)) {
			fmt.Fprintf(tw, "  %s\t%d\t%s\n", p, len(ids[p]), strings.Join(ids[p], ", "))
		}
		tw.Flush()
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintln(w, "left unchanged:")
		for _, s := range r.Skipped {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
	if len(r.Unmatched) > 0 {
		fmt.Fprintf(w, "tools called that are no preset: %s\n", strings.Join(r.Unmatched, ", "))
		fmt.Fprintf(w, "  to substitute one, map it to a preset: --map %s=PRESET (llmproxy presets lists them)\n", r.Unmatched[0])
	}
}
