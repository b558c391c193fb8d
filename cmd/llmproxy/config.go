package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// repeatable marks flags whose environment variable holds a comma-separated list.
type repeatable interface{ isRepeatable() }

func (l *listFlag) isRepeatable() {}

// newFlagSet returns the FlagSet of `llmproxy name`. It reports errors
// instead of exiting, and its help (-h, --help), written to help (stdout:
// help asked for is the command's output), starts with the command's
// one-sentence summary and lists the command's own flags only.
func newFlagSet(name string, help io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("llmproxy "+name, flag.ContinueOnError)
	fs.SetOutput(help)
	fs.Usage = func() { printHelp(fs.Output(), name, fs) }
	return fs
}

// commandOf is the command a FlagSet belongs to: "record" for "llmproxy record".
func commandOf(fs *flag.FlagSet) string { return strings.TrimPrefix(fs.Name(), "llmproxy ") }

// printHelp writes the help of command name: its summary, its synopsis, and
// its flags with their placeholders and defaults.
func printHelp(w io.Writer, name string, fs *flag.FlagSet) {
	cmd, _ := findCommand(name)
	fmt.Fprintf(w, "llmproxy %s %s.\n\nUsage: %s\n", name, cmd.summary, strings.TrimSpace("llmproxy "+name+" "+cmd.synopsis))
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		if n++; n == 1 {
			fmt.Fprint(w, "\nFlags:\n")
		}
		placeholder, text := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s", f.Name)
		if placeholder != "" {
			fmt.Fprintf(w, " %s", strings.ToUpper(placeholder))
		}
		fmt.Fprintf(w, "\n        %s", text)
		switch f.DefValue {
		case "", "false", "0", "0s":
		default:
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
	if n > 0 {
		example := "cassette"
		if fs.Lookup(example) == nil {
			fs.VisitAll(func(f *flag.Flag) { example = f.Name })
		}
		fmt.Fprintf(w, "\nEach flag can also be set by its environment variable: --%s by %s.\n", example, envName(example))
	}
}

// envName is the environment variable of a flag: LLMPROXY_ + upper snake case.
func envName(flagName string) string {
	return "LLMPROXY_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseFlags parses args, then fills every flag not given on the command
// line from its LLMPROXY_<FLAG> environment variable. Any problem is a
// usageError naming the flag or variable; -h prints the help and returns
// errHelp.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	_, err := parseFlagsFrom(fs, args, getenv)
	return err
}

// parseFlagsFrom is parseFlags that also returns the flags set from the
// environment, each with its variable's name, so that a later check of a
// value can name where the value came from.
func parseFlagsFrom(fs *flag.FlagSet, args []string, getenv func(string) string) (map[string]string, error) {
	// The flag package prints a refused flag and the whole help; the error
	// alone, with a pointer to the help, says it better.
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	if errors.Is(err, flag.ErrHelp) {
		fs.Usage()
		return nil, errHelp
	}
	if err != nil {
		return nil, flagError(fs, err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	fromEnv := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || set[f.Name] {
			return
		}
		v, ok := lookupEnv(getenv, envName(f.Name))
		if !ok {
			return
		}
		values := []string{v}
		if _, rep := f.Value.(repeatable); rep {
			values = splitList(v)
		}
		for _, one := range values {
			if e := fs.Set(f.Name, one); e != nil {
				err = usagef("%s=%q: %v", envName(f.Name), v, e)
				return
			}
		}
		fromEnv[f.Name] = envName(f.Name)
	})
	return fromEnv, err
}

// flagError turns the flag package's complaint about the command line into
// a usage error of two lines: the problem, naming the commands that do take
// a flag this one does not, and where the command's help is.
func flagError(fs *flag.FlagSet, err error) error {
	name := commandOf(fs)
	// The flag package names a flag with one dash; llmproxy's are spelt --.
	msg := strings.Replace(err.Error(), " for flag -", " for flag --", 1)
	if f, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		if owners := commandsWithFlag(f, name); len(owners) > 0 {
			msg = fmt.Sprintf("--%s is not a flag of %s (%s take it)", f, name, strings.Join(owners, " and "))
		}
	}
	return usagef("%s: %s\nRun 'llmproxy %s --help' for its flags.", name, msg, name)
}

func lookupEnv(getenv func(string) string, name string) (string, bool) {
	if getenv == nil {
		return os.LookupEnv(name)
	}
	v := getenv(name)
	return v, v != ""
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// noArgs rejects positional arguments where a command takes none.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", commandOf(fs), fs.Arg(0))
	}
	return nil
}

// parseCommand parses the flags of a command that takes no argument, and
// requires each flag named in required to be set, in that order.
func parseCommand(fs *flag.FlagSet, args []string, required ...string) error {
	if err := parseFlags(fs, args, nil); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	for _, name := range required {
		if err := requireFlag(fs, name, fs.Lookup(name).Value.String()); err != nil {
			return err
		}
	}
	return nil
}

func requireFlag(fs *flag.FlagSet, name, value string) error {
	if value == "" {
		return usagef("%s: --%s is required (or %s)", commandOf(fs), name, envName(name))
	}
	return nil
}
