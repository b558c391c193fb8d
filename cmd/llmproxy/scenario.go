package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/llmproxy/llmproxy/scenario"
)

// runScenario is `llmproxy scenario SUBCOMMAND`: for now, check.
func runScenario(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("scenario", stderr)
	if err := parseFlags(fs, args, nil); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("scenario: name a subcommand: check\nRun 'llmproxy scenario -h' for help.")
	}
	switch sub := fs.Arg(0); sub {
	case "check":
		return runScenarioCheck(ctx, fs.Args()[1:], stdout, stderr)
	default:
		return usagef("scenario: unknown subcommand %q (llmproxy scenario takes: check)\nRun 'llmproxy scenario -h' for help.", sub)
	}
}

// runScenarioCheck loads the files as mock would and prints every problem,
// one a line, on stdout; any problem is exit 1.
func runScenarioCheck(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("scenario check", stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "llmproxy scenario check loads scenario files as llmproxy mock does and lists every problem as FILE:LINE: message; it exits 1 when there is one.\n\nUsage: llmproxy scenario check FILE...\n")
	}
	if err := parseFlags(fs, args, nil); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("scenario check: name at least one scenario file")
	}
	all, err := scenario.LoadAll(fs.Args()...)
	var list scenario.ErrorList
	switch {
	case errors.As(err, &list):
		for _, e := range list {
			fmt.Fprintln(stdout, e)
		}
		return &exitError{code: 1, msg: fmt.Sprintf("scenario check: %s", plural(len(list), "problem"))}
	case err != nil:
		return err
	}
	for i, s := range all {
		fmt.Fprintf(stdout, "%s: ok (scenario %s: %s, %s)\n", fs.Arg(i), s.Name, plural(len(s.Steps), "step"), plural(len(s.Fixtures), "fixture"))
	}
	return nil
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
