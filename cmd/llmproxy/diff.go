package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/review"
)

// diffSynopsis is diff's usage line, with the rule for a git revision.
const diffSynopsis = `OLD NEW [--format text|markdown|json] [--fail-on behaviour|wording|any]

OLD and NEW are cassette files, in that order. Either may instead be a git
revision: REV:PATH is the file at PATH in REV (PATH as git reads it: from
the repository's root, or ./PATH from the current directory), and a bare
REV is the other argument's file in REV. So 'llmproxy diff HEAD x.cassette'
shows what a re-record of x.cassette changed since the last commit.

Exit status: 0 when the two are identical (or differ only in classes that
--fail-on does not count), 1 when they differ, 2 on a usage error or when a
side cannot be read (a missing file, not a cassette, a bad revision).`

// runDiff compares two cassettes conversation by conversation and prints
// each change with its class.
func runDiff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("diff", stdout)
	format := fs.String("format", "text", "output `form`: text, markdown (a pull-request comment) or json")
	failOn := fs.String("fail-on", "any", "which differences `class` exit 1: behaviour (tool calls, arguments, finish reason, structured output, errors, turns added or removed), wording (those and the answers' text), any (those, the request side and conversations added or removed)")
	var sides []string
	for rest := args; ; {
		if err := parseFlags(fs, rest, nil); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		sides, rest = append(sides, fs.Arg(0)), fs.Args()[1:]
	}
	f, err := review.ParseFormat(*format)
	if err != nil {
		return usagef("diff: --format: %v", err)
	}
	gate, err := review.ParseGate(*failOn)
	if err != nil {
		return usagef("diff: --fail-on: %v", err)
	}
	if len(sides) != 2 {
		return usagef("diff: want two arguments, OLD and NEW, got %d\nRun 'llmproxy diff --help' for what they may be.", len(sides))
	}
	tmp, err := os.MkdirTemp("", "llmproxy-diff-")
	if err != nil {
		return trouble(err)
	}
	defer os.RemoveAll(tmp)
	oldPath, err := diffSide(ctx, sides[0], sides[1], filepath.Join(tmp, "old.cassette"))
	if err != nil {
		return trouble(fmt.Errorf("OLD %s: %w", sides[0], err))
	}
	newPath, err := diffSide(ctx, sides[1], sides[0], filepath.Join(tmp, "new.cassette"))
	if err != nil {
		return trouble(fmt.Errorf("NEW %s: %w", sides[1], err))
	}
	summary, err := diffCassettes(ctx, oldPath, newPath, sides, f, stdout)
	if err != nil {
		return trouble(err)
	}
	if summary.Fails(gate) {
		return &exitError{code: 1, msg: fmt.Sprintf("diff: %s and %s differ (--fail-on %s)", sides[0], sides[1], gate)}
	}
	return nil
}

// diffCassettes opens both cassettes read-only, reviews them and writes
// the review.
func diffCassettes(ctx context.Context, oldPath, newPath string, names []string, f review.Format, w io.Writer) (review.Summary, error) {
	old, err := cassette.Open(oldPath, cassette.Options{ReadOnly: true})
	if err != nil {
		return review.Summary{}, fmt.Errorf("OLD %s: %w", names[0], err)
	}
	defer old.Close()
	cur, err := cassette.Open(newPath, cassette.Options{ReadOnly: true})
	if err != nil {
		return review.Summary{}, fmt.Errorf("NEW %s: %w", names[1], err)
	}
	defer cur.Close()
	r, err := review.New(ctx, old, cur)
	if err != nil {
		return review.Summary{}, err
	}
	return r.Summary(), r.Write(w, f, names[0], names[1])
}

// trouble is an error that exits 2: diff keeps 1 for "they differ".
func trouble(err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code: 2, msg: "diff: " + err.Error()}
}

// errNotFound is a side that is neither a file nor a revision.
var errNotFound = errors.New("no such file, and not a git revision")

// diffSide returns the cassette file an argument names: the file itself;
// for REV:PATH, or a bare REV (of other's file), the file's bytes in that
// revision, written by git to tmp.
func diffSide(ctx context.Context, arg, other, tmp string) (string, error) {
	if _, err := os.Stat(arg); err == nil {
		return arg, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	dir, object := ".", arg
	if !strings.Contains(arg, ":") {
		if _, err := os.Stat(other); err != nil {
			return "", errNotFound
		}
		// A bare revision: the other side's file, from its own directory.
		dir, object = filepath.Dir(other), arg+":./"+filepath.Base(other)
		verify := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--verify", "--quiet", arg+"^{commit}")
		if verify.Run() != nil {
			return "", errNotFound
		}
	}
	return tmp, gitShow(ctx, dir, object, tmp)
}

// gitShow writes `git show OBJECT` (run in dir) to the file out.
func gitShow(ctx context.Context, dir, object, out string) error {
	f, err := os.OpenFile(out, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	var msg strings.Builder
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "show", "--no-textconv", object)
	cmd.Stdout, cmd.Stderr = f, &msg
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return fmt.Errorf("%w (and git is not installed to read a revision)", errNotFound)
		}
		first, _, _ := strings.Cut(strings.TrimSpace(msg.String()), "\n")
		return fmt.Errorf("git show %s: %s", object, cmp(first, err.Error()))
	}
	return f.Close()
}
