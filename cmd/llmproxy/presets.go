package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/llmproxy/llmproxy/presets"
)

// runPresets is `llmproxy presets [NAME] [--json]`: it prints the catalogue
// of function-tool presets, or one preset's schemas. It returns the exit
// code: 0, 1 when stdout cannot be written, 2 for a usage mistake.
func runPresets(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	_ = ctx // the command does no I/O worth cancelling

	fs := newFlagSet("presets", stdout)
	asJSON := fs.Bool("json", false, "print JSON: the whole catalogue, or the one preset")

	// Flags may come before or after NAME.
	var names []string
	for rest := args; ; {
		if err := parseFlags(fs, rest, nil); err != nil {
			return exitCode(err, stderr)
		}
		if fs.NArg() == 0 {
			break
		}
		names = append(names, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(names) > 1 {
		fmt.Fprintf(stderr, "llmproxy presets: want at most one preset name, got %d: %s\n", len(names), strings.Join(names, " "))
		return 2
	}

	var out strings.Builder
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")

	switch {
	case len(names) == 0 && *asJSON:
		if err := enc.Encode(presets.All()); err != nil {
			fmt.Fprintf(stderr, "llmproxy presets: %v\n", err)
			return 1
		}

	case len(names) == 0:
		tw := tabwriter.NewWriter(&out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tARGUMENTS\tDESCRIPTION")
		for _, d := range presets.All() {
			var params []string
			for _, p := range d.Params() {
				if p.Required {
					params = append(params, p.Name)
				} else {
					params = append(params, p.Name+"?")
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", d.Name(), strings.Join(params, ", "), d.Description())
		}
		tw.Flush()
		fmt.Fprintln(&out, "\n? marks an optional argument. 'llmproxy presets NAME' prints a preset's schemas.")

	default:
		d, ok := presets.Lookup(names[0])
		if !ok {
			var known []string
			for _, d := range presets.All() {
				known = append(known, d.Name())
			}
			fmt.Fprintf(stderr, "llmproxy presets: unknown preset %q (known: %s)\n", names[0], strings.Join(known, ", "))
			return 2
		}
		if *asJSON {
			if err := enc.Encode(d); err != nil {
				fmt.Fprintf(stderr, "llmproxy presets: %s: %v\n", d.Name(), err)
				return 1
			}
			break
		}
		fmt.Fprintf(&out, "%s: %s\n", d.Name(), d.Description())
		for _, s := range []struct {
			label  string
			schema []byte
		}{
			{"Arguments schema", d.ArgumentsSchema()},
			{"Result schema", d.ResultSchema()},
			{"Error schema", d.ErrorSchema()},
		} {
			fmt.Fprintf(&out, "\n%s:\n", s.label)
			if err := enc.Encode(json.RawMessage(s.schema)); err != nil {
				fmt.Fprintf(stderr, "llmproxy presets: %s: %v\n", d.Name(), err)
				return 1
			}
		}
	}

	if _, err := io.WriteString(stdout, out.String()); err != nil {
		fmt.Fprintf(stderr, "llmproxy presets: writing output: %v\n", err)
		return 1
	}
	return 0
}
