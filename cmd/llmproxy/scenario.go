package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/scenario"
)

const scenarioUsage = `llmproxy scenario works with scenario files, the scripts llmproxy mock serves.

Usage:
  llmproxy scenario check FILE...   lists every problem of the files as FILE:LINE: message
  llmproxy scenario from-cassette --cassette FILE [--out FILE]
                                    writes a scenario that answers the cassette's recorded conversations

`

// runScenario runs a scenario subcommand.
func runScenario(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, scenarioUsage)
		return usagef("scenario: a subcommand is required")
	}
	switch args[0] {
	case "check":
		return runScenarioCheck(ctx, args[1:], stdout, stderr)
	case "from-cassette":
		return runScenarioFromCassette(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, scenarioUsage)
		return nil
	}
	fmt.Fprint(stderr, scenarioUsage)
	return usagef("scenario: unknown subcommand %q", args[0])
}

// runScenarioCheck loads the files as mock would and prints every problem,
// one a line, on stdout; any problem is exit 1.
func runScenarioCheck(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("scenario check", stdout)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "llmproxy scenario check checks scenario files as llmproxy mock loads them and lists every problem as FILE:LINE: message.\n\nUsage:\n  llmproxy scenario check FILE...\n")
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

// runScenarioFromCassette writes a scenario that answers a cassette's
// recorded conversations as they were answered (scenario.FromCassette).
func runScenarioFromCassette(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("scenario from-cassette", stdout)
	path := fs.String("cassette", "", "cassette `file` to convert")
	out := fs.String("out", "", "scenario `file` to write (default: stdout)")
	fs.Usage = func() {
		fmt.Fprintf(stdout, "llmproxy scenario from-cassette writes a scenario that answers a cassette's recorded conversations with the same text and tool calls.\n\nUsage:\n  llmproxy scenario from-cassette --cassette FILE [--out FILE]\n")
	}
	if err := parseFlags(fs, args, nil); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if *path == "" {
		return usagef("scenario from-cassette: --cassette is required")
	}
	c, err := cassette.Open(*path, cassette.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer c.Close()
	text, err := scenario.FromCassette(c, cmp(*out, "from-cassette.yaml"))
	if err != nil {
		return fmt.Errorf("scenario from-cassette %s: %w", *path, err)
	}
	if *out == "" {
		_, err = stdout.Write(text)
		return err
	}
	return os.WriteFile(*out, text, 0o644)
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
