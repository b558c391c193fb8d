// Command llmproxy records and replays LLM provider APIs.
//
// See the README for the workflow and ../../docs for the details; `llmproxy
// help` lists the subcommands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/llmproxy/llmproxy/internal/heapfloor"
)

func main() {
	// The collector's heap goal at least 16 MB above the live heap, unless
	// the user set GOGC: a proxy's live heap is small and it allocates fast
	// (internal/heapfloor).
	heapfloor.StartServing()
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// command is one subcommand: its name, the one sentence (a verb phrase) that
// says what it does, its arguments, and how it runs.
type command struct {
	name, summary, synopsis string
	run                     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands lists the subcommands in the order the usage shows them.
func commands() []command {
	serve := func(name string) func(context.Context, []string, io.Writer, io.Writer) error {
		return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return runServe(ctx, name, args, stdout, stderr, signals)
		}
	}
	return []command{
		{"record", "forwards each request to its provider, streams the answer back and stores the interaction in a cassette",
			"--cassette FILE | --cassette-dir DIR [flags] [-- CMD [ARG]...]", serve("record")},
		{"replay", "answers each request from a cassette, byte for byte, and never contacts a provider",
			"--cassette FILE | --cassette-dir DIR [flags] [-- CMD [ARG]...]", serve("replay")},
		{"auto", "replays the requests a cassette holds and records the ones it does not",
			"--cassette FILE | --cassette-dir DIR [flags] [-- CMD [ARG]...]", serve("auto")},
		{"scrub", "rewrites a cassette's calls to preset tools, and their results, into fixtures, so that replayed tools never run",
			"--cassette FILE [--map TOOL=PRESET]... [--out FILE] [--strict]", runScrub},
		{"export", "writes a cassette as stable, pretty JSON",
			"--cassette FILE [--out FILE]", runExport},
		{"import", "builds a cassette from an export",
			"--in FILE --cassette FILE [--force]", runImport},
		{"ls", "lists a cassette's interactions, one line each",
			"--cassette FILE", runLs},
		{"diff", "compares two cassettes (or a cassette and its git revision) conversation by conversation and classes each change as wording, behaviour or request side",
			diffSynopsis, runDiff},
		{"report", "sums the token usage a cassette's recorded answers carry, per model, conversation and test, and with --prices its cost",
			"--cassette FILE... | --cassette-dir DIR [--prices FILE] [--format text|json]", runTokens},
		{"prune", "drops the interactions a run did not use from a cassette, atomically, listing them",
			"--cassette FILE --used RUN.json", runPrune},
		{"migrate", "rewrites a cassette of an older format in the current one, atomically, keeping what it exports",
			"--cassette FILE", runMigrate},
		{"mock", "answers each request from scripted scenarios, on every provider's wire, and never contacts a provider",
			"[--scenario FILE]... [flags] [-- CMD [ARG]...]", func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				return runMock(ctx, args, stdout, stderr, signals)
			}},
		{"scenario", "checks scenario files (every problem as FILE:LINE: message) and writes one from a cassette",
			"check FILE... | from-cassette --cassette FILE [--out FILE]", runScenario},
		{"presets", "lists the function-tool presets, or prints one preset's JSON Schemas",
			"[NAME] [--json]", nil},
		{"demo", "replays the bundled demo cassette through a real client's tool round, with no network and no key",
			"", runDemo},
		{"mcp", "records, replays or mocks an MCP server that speaks over stdio, wrapping the command an agent would run",
			mcpSynopsis, runMCP},
		{"view", "serves the web view of a cassette or a scenario alone, read-only, and never contacts a provider",
			"--cassette FILE | --scenario FILE... [--listen ADDR]", func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				return runView(ctx, args, stdout, stderr, signals)
			}},
		{"version", "prints llmproxy's version", "", runVersion},
		{"help", "lists the commands, or with COMMAND prints that command's help", "[COMMAND]", runHelp},
	}
}

// writeUsage writes the usage: what llmproxy is, its version, and each
// command with its one-sentence job.
func writeUsage(w io.Writer) {
	fmt.Fprintf(w, "llmproxy %s records and replays LLM provider APIs.\n\nUsage: llmproxy COMMAND [flags]\n\nCommands:\n", version)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range commands() {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
	fmt.Fprint(w, `
Run 'llmproxy COMMAND -h' for what a command takes. Every flag can also be
set with an environment variable LLMPROXY_<FLAG>, e.g. LLMPROXY_CASSETTE.
`)
}

// runHelp is `llmproxy help [COMMAND]`: the usage, or that command's help,
// on stdout.
func runHelp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("help", stdout)
	if err := parseFlags(fs, args, nil); err != nil {
		return err
	}
	switch fs.NArg() {
	case 0:
		writeUsage(stdout)
		return nil
	case 1:
		if name := fs.Arg(0); name == "presets" {
			runPresets(ctx, []string{"-h"}, stdout, stdout)
			return nil
		} else if cmd, ok := findCommand(name); ok {
			return cmd.run(ctx, []string{"-h"}, stdout, stdout)
		}
		return usagef("help: unknown command %q\nRun 'llmproxy help' for the commands.", fs.Arg(0))
	}
	return usagef("help: want at most one command, got %d", fs.NArg())
}

// findCommand returns the command called name.
func findCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "llmproxy: internal error: %v\n", r)
			code = 1
		}
	}()
	if len(args) == 0 {
		writeUsage(stderr)
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "presets":
		return runPresets(ctx, rest, stdout, stderr)
	case "-h", "-help", "--help":
		name = "help"
	case "-version", "--version":
		name = "version"
	}
	cmd, ok := findCommand(name)
	if !ok {
		fmt.Fprintf(stderr, "llmproxy: unknown command %q\nRun 'llmproxy help' for the commands.\n", name)
		return 2
	}
	return exitCode(cmd.run(ctx, rest, stdout, stderr), stderr)
}

// usageError is a command-line mistake: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// exitError carries a specific exit code with its message.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// errHelp means -h was asked for; the usage is already printed.
var errHelp = errors.New("help requested")

// exitCode prints err, if any, as one "llmproxy: " message on stderr and
// returns the exit code it stands for.
func exitCode(err error, stderr io.Writer) int {
	var ue *usageError
	var ee *exitError
	code, msg := 1, ""
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.As(err, &ue):
		code, msg = 2, err.Error()
	case errors.As(err, &ee):
		code, msg = ee.code, ee.msg
	default:
		msg = err.Error()
	}
	fmt.Fprintf(stderr, "llmproxy: %s\n", strings.TrimPrefix(msg, "llmproxy: "))
	return code
}

// signals delivers SIGINT and SIGTERM.
func signals() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	return ch, func() { signal.Stop(ch) }
}
