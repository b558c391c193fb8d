package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/wire"
)

// runScrub rewrites the tool rounds of a cassette into preset fixtures
// (SPEC §6, docs/scrub.md). The substitution itself is presets.Substituter;
// this is the cassette I/O around it: read the whole cassette, substitute,
// and write it back in one transaction (or to --out, built beside it and
// renamed into place), so the file is never half written.
func runScrub(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("scrub", stderr)
	path := fs.String("cassette", "", "cassette `file` to scrub (rewritten in place unless --out is given)")
	var mapSpecs listFlag
	fs.Var(&mapSpecs, "map", "substitute an application tool as a preset: `TOOL=PRESET` (repeatable)")
	out := fs.String("out", "", "write the scrubbed cassette to `file` and leave --cassette as it is")
	strict := fs.Bool("strict", false, "fail, writing nothing, when a call to a preset is left unchanged")
	if err := parseFlags(fs, args, nil); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if err := requireFlag(fs, "cassette", *path); err != nil {
		return err
	}
	mapping, err := presets.ParseMapping(mapSpecs)
	if err != nil {
		return usagef("scrub: --map: %v", err)
	}
	s := scrubJob{path: *path, out: *out, strict: *strict, sub: presets.Substituter{Map: mapping}, stdout: stdout}
	return s.run()
}

// scrubJob is one run of llmproxy scrub.
type scrubJob struct {
	path, out string
	strict    bool
	sub       presets.Substituter
	stdout    io.Writer
}

func (s *scrubJob) run() error {
	if _, err := os.Stat(s.path); err != nil {
		return fmt.Errorf("--cassette: %w", err)
	}
	// In place, the cassette stays open, and locked against other writers,
	// from reading it to writing it back.
	c, err := cassette.Open(s.path, cassette.Options{ReadOnly: s.out != "", Version: version})
	if err != nil {
		return fmt.Errorf("--cassette %s: %w", s.path, err)
	}
	ct, err := c.Load()
	if s.out != "" {
		if cerr := c.Close(); err == nil && cerr != nil {
			err = cerr
		}
	} else {
		defer c.Close()
	}
	if err != nil {
		return fmt.Errorf("--cassette %s: %w", s.path, err)
	}
	next, changed, report, err := s.scrub(ct)
	if err != nil {
		return fmt.Errorf("scrub %s: %w", s.path, err)
	}
	printReport(s.stdout, s.path, report)
	if s.strict && len(report.Skipped) > 0 {
		return fmt.Errorf("scrub %s: --strict: %d tool call(s) left unchanged; nothing written", s.path, len(report.Skipped))
	}
	m, err := defaultMatcher()
	if err != nil {
		return err
	}
	if changed || next.Meta.IndexRules != m.Fingerprint() {
		next.Meta.Updated = time.Now().UTC()
		next.Meta.IndexRules = m.Fingerprint()
	}
	if s.out != "" {
		if err := writeCassette(s.out, next, proxy.Keys(m)); err != nil {
			return err
		}
		fmt.Fprintf(s.stdout, "wrote %s\n", s.out)
		return nil
	}
	if !changed && ct.Meta.IndexRules == m.Fingerprint() {
		fmt.Fprintf(s.stdout, "nothing to change in %s\n", s.path)
		return nil
	}
	if err := c.Replace(next, proxy.Keys(m)); err != nil {
		return fmt.Errorf("--cassette %s: %w", s.path, err)
	}
	fmt.Fprintf(s.stdout, "rewrote %s\n", s.path)
	return nil
}

// scrub substitutes the contents of a cassette. It returns the new
// contents, whether any interaction or fixture differs, and the report;
// ct itself is not changed.
func (s *scrubJob) scrub(ct *cassette.Contents) (*cassette.Contents, bool, presets.Report, error) {
	xs := make([]presets.Exchange, len(ct.Interactions))
	for n, i := range ct.Interactions {
		x := presets.Exchange{
			ID: i.ID, Kind: wire.Kind(i.Kind), Path: i.Request.Path, Request: i.Request.Body,
			Status: i.Response.Status, Framing: framingNamed(i.Response.Framing),
		}
		if i.Response.Streamed() {
			x.Events = make([][]byte, len(i.Response.Events))
			for k, e := range i.Response.Events {
				x.Events[k] = e.Data
			}
		} else {
			x.Response = i.Response.Body
		}
		xs[n] = x
	}
	res, err := s.sub.Substitute(xs)
	if err != nil {
		return nil, false, presets.Report{}, err
	}
	next := &cassette.Contents{Meta: ct.Meta, Fixtures: maps.Clone(ct.Fixtures)}
	if next.Fixtures == nil {
		next.Fixtures = map[string]json.RawMessage{}
	}
	changed := false
	for n, old := range ct.Interactions {
		i := *old
		x := res.Exchanges[n]
		if !bytes.Equal(x.Request, i.Request.Body) {
			i.Request.Body, changed = x.Request, true
		}
		if i.Response.Streamed() {
			evs := slices.Clone(i.Response.Events)
			for k := range evs {
				if !bytes.Equal(x.Events[k], evs[k].Data) {
					evs[k].Data, changed = x.Events[k], true
				}
			}
			i.Response.Events = evs
		} else if !bytes.Equal(x.Response, i.Response.Body) {
			i.Response.Body, changed = x.Response, true
		}
		next.Interactions = append(next.Interactions, &i)
	}
	for id, raw := range res.Fixtures {
		if !bytes.Equal(next.Fixtures[id], raw) {
			next.Fixtures[id], changed = raw, true
		}
	}
	return next, changed, res.Report, nil
}

// framingNamed is the wire framing of a stored Response.Framing.
func framingNamed(name string) wire.Framing {
	switch name {
	case "sse":
		return wire.FramingSSE
	case "ndjson":
		return wire.FramingNDJSON
	}
	return wire.FramingNone
}

// printReport writes what a scrub did: the calls substituted per preset,
// then each call left unchanged with where and why.
func printReport(w io.Writer, path string, r presets.Report) {
	fmt.Fprintf(w, "scrub %s: %d tool call(s) substituted, %d left unchanged\n", path, len(r.Substituted), len(r.Skipped))
	if len(r.Substituted) > 0 {
		ids := map[string][]string{}
		for _, s := range r.Substituted {
			ids[s.Preset] = append(ids[s.Preset], s.NewID)
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
}

// writeCassette builds a new cassette holding ct beside path and renames it
// into place, replacing any file there.
func writeCassette(path string, ct *cassette.Contents, keys cassette.Keys) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	name := tmp.Name()
	tmp.Close()
	os.Remove(name) // bbolt creates its own file
	defer os.Remove(name)
	c, err := cassette.Open(name, cassette.Options{Version: version})
	if err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	if err := c.Replace(ct, keys); err != nil {
		c.Close()
		return fmt.Errorf("--out %s: %w", path, err)
	}
	if err := c.Close(); err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	return nil
}
