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
	"syscall"
)

// version is stamped into new cassettes' metadata.
var version = "0.1.0-dev"

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `llmproxy records and replays LLM provider APIs.

Usage:
  llmproxy record  --cassette FILE [--listen ADDR] [--upstream URL] [--upstream NAME=URL]...
  llmproxy replay  --cassette FILE [--listen ADDR] [--pace instant|recorded] [--on-exhausted reject|repeat-last|restart]
  llmproxy auto    --cassette FILE [--listen ADDR] [--upstream ...]
  llmproxy scrub   --cassette FILE [--map TOOL=PRESET]... [--out FILE] [--strict]
  llmproxy export  --cassette FILE [--out FILE]
  llmproxy import  --in FILE --cassette FILE
  llmproxy ls      --cassette FILE
  llmproxy presets [NAME] [--json]
  llmproxy demo
  llmproxy view    --cassette FILE [--listen ADDR]

Run 'llmproxy COMMAND -h' for a command's flags. Every flag can also be set
with an environment variable LLMPROXY_<FLAG>, e.g. LLMPROXY_CASSETTE.
`

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "llmproxy: internal error: %v\n", r)
			code = 1
		}
	}()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "record", "replay", "auto":
		err = runServe(ctx, cmd, rest, stdout, stderr, signals)
	case "export":
		err = runExport(ctx, rest, stdout, stderr)
	case "import":
		err = runImport(ctx, rest, stdout, stderr)
	case "ls":
		err = runLs(ctx, rest, stdout, stderr)
	case "scrub":
		err = runScrub(ctx, rest, stdout, stderr)
	case "demo":
		err = runDemo(ctx, rest, stdout, stderr)
	case "view":
		err = runView(ctx, rest, stdout, stderr, signals)
	case "presets":
		return runPresets(ctx, rest, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "version", "--version":
		fmt.Fprintln(stdout, "llmproxy", version)
		return 0
	default:
		fmt.Fprintf(stderr, "llmproxy: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	return exitCode(err, stderr)
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

func exitCode(err error, stderr io.Writer) int {
	var ue *usageError
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "llmproxy: %v\n", err)
		return 2
	case errors.As(err, &ee):
		fmt.Fprintf(stderr, "llmproxy: %v\n", ee.msg)
		return ee.code
	}
	fmt.Fprintf(stderr, "llmproxy: %v\n", err)
	return 1
}

// signals delivers SIGINT and SIGTERM.
func signals() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	return ch, func() { signal.Stop(ch) }
}
