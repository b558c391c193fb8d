package main

import (
	"flag"
	"io"
	"log/slog"

	"github.com/llmproxy/llmproxy/internal/batchlog"
)

// logFlags are the logging flags of every serving command.
//
// The default level, info, logs what changes a file or needs attention: a
// recording written, a miss, a refused or failed request, shutdown. Each
// answer served from a cassette or a scenario is a debug line: a replay
// serving thousands of requests a second formats no line for each, and
// GET /_llmproxy/log lists every one of them anyway. The listening line is
// not a log line and is always printed.
type logFlags struct {
	format string
	level  string
	// quiet lowers the level to warn when --log-level is not given: under
	// `-- CMD`, whose stderr the log shares.
	quiet bool
	// batch, when not nil (see batched), is where log lines are written,
	// instead of the writer given to logger.
	batch *batchlog.Writer
}

// logLevels are the values --log-level takes.
var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

// register adds --log-format and --log-level to fs.
func (l *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.format, "log-format", "text", "log `format`: text or json")
	fs.StringVar(&l.level, "log-level", "info", "least `level` logged: debug (also a line per answer served), info, warn or error; under -- CMD, warn unless given")
}

// underCommand sets quiet for a command run under `-- CMD` (cr not nil)
// whose flags fs do not give --log-level, on the command line or by its
// environment variable.
func (l *logFlags) underCommand(fs *flag.FlagSet, cr *commandRun) {
	l.quiet = cr != nil && !given(fs, "log-level")
}

// batched makes the log lines of a serving command wait in a batch (at
// most batchlog.Delay) to be written together, off the requests' path, and
// returns the writer for the rest of the command's output to stderr, which
// flushes the batch before each write so that nothing is reordered, and the
// function that writes what is left when the command ends. A warning or an
// error is written at once, with every line before it, as without
// batching.
func (l *logFlags) batched(stderr io.Writer) (io.Writer, func()) {
	l.batch = batchlog.New(stderr, batchlog.Delay)
	return l.batch.Direct(), func() { _ = l.batch.Close() }
}

// logger is the logger the flags ask for, writing to w (or to the batch,
// see batched). source names a flag as the user gave it, for errors.
func (l *logFlags) logger(w io.Writer, source func(string) string) (*slog.Logger, error) {
	name := l.level
	if name == "" {
		name = "info"
	}
	level, ok := logLevels[name]
	if !ok {
		return nil, usagef("%s %q: want debug, info, warn or error", source("log-level"), l.level)
	}
	if l.quiet {
		level = slog.LevelWarn
	}
	opts := &slog.HandlerOptions{Level: level}
	if l.batch != nil {
		w = l.batch
	}
	var h slog.Handler
	switch l.format {
	case "text", "":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, usagef("%s %q: want text or json", source("log-format"), l.format)
	}
	if l.batch != nil {
		h = batchlog.Handler(h, l.batch, slog.LevelWarn)
	}
	return slog.New(h), nil
}

// given reports whether the flag name of fs was set, on the command line or
// by its environment variable.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
