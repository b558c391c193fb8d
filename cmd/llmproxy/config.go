package main

import (
	"errors"
	"flag"
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

// newFlagSet returns a FlagSet that reports errors instead of exiting.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("llmproxy "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// envName is the environment variable of a flag: LLMPROXY_ + upper snake case.
func envName(flagName string) string {
	return "LLMPROXY_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseFlags parses args, then fills every flag not given on the command
// line from its LLMPROXY_<FLAG> environment variable. Any problem is a
// usageError naming the flag or variable.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return &usageError{err.Error()}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
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
	})
	return err
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
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

func requireFlag(fs *flag.FlagSet, name, value string) error {
	if value == "" {
		return usagef("%s: --%s is required (or %s)", fs.Name(), name, envName(name))
	}
	return nil
}
