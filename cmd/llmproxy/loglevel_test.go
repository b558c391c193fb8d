package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/internal/fake"
)

// The log level decides which lines a replay writes: an answer served is a
// debug line, a miss a warning, and the listening line is printed whatever
// the level.
func TestLogLevel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "one.cassette")
	recordPrompts(t, path, fake.New(t, numbered()), "first")
	for _, tc := range []struct {
		flags          []string
		env            string
		served, missed bool
	}{
		{flags: nil, served: false, missed: true},
		{flags: []string{"--log-level", "debug"}, served: true, missed: true},
		{flags: []string{"--log-level", "info"}, served: false, missed: true},
		{flags: []string{"--log-level", "warn"}, served: false, missed: true},
		{flags: []string{"--log-level", "error"}, served: false, missed: false},
		{env: "debug", served: true, missed: true},
		{flags: []string{"--log-level", "debug", "--log-format", "json"}, served: true, missed: true},
	} {
		name := strings.Join(tc.flags, " ") + " " + tc.env
		t.Run(name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("LLMPROXY_LOG_LEVEL", tc.env)
			}
			s := serve(t, append([]string{"replay", "--cassette", path}, tc.flags...)...)
			if s.base == "" {
				t.Fatalf("replay did not start: exit %d: %s", <-s.done, s.stderr)
			}
			if got := s.ask(t, "first"); !strings.HasPrefix(got, "200 ") {
				t.Fatalf("the recorded prompt: %s", got)
			}
			if got := s.ask(t, "not recorded"); !strings.HasPrefix(got, "400 ") {
				t.Fatalf("the prompt not recorded: %s", got)
			}
			// A warning is written before its answer, with every line
			// before it: the debug line of the answer served, which alone
			// would wait in the log's batch.
			early := s.stderr.String()
			if code := s.stop(); code != 0 {
				t.Fatalf("exit %d: %s", code, s.stderr)
			}
			log := s.stderr.String()
			served, missed := logged(log, "replayed"), logged(log, "miss")
			if served != tc.served || missed != tc.missed {
				t.Errorf("log has the answer served: %v (want %v), the miss: %v (want %v):\n%s", served, tc.served, missed, tc.missed, log)
			}
			if missed && (!logged(early, "miss") || logged(early, "replayed") != served) {
				t.Errorf("when the miss was answered, the log was:\n%s\nwant the miss, after the answer served if logged; at exit:\n%s", early, log)
			}
		})
	}
}

// logged reports whether log has a line of the message msg, text or JSON.
func logged(log, msg string) bool {
	return strings.Contains(log, "msg="+msg) || strings.Contains(log, `"msg":"`+msg+`"`)
}

func TestLogLevelUsage(t *testing.T) {
	for _, args := range [][]string{
		{"replay", "--cassette", "x", "--log-level", "loud"},
		{"record", "--cassette", "x", "--log-level", "loud"},
		{"mock", "--scenario", "x", "--log-level", "loud"},
		{"view", "--cassette", "x", "--log-level", "loud"},
	} {
		t.Chdir(t.TempDir())
		code, _, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, `--log-level "loud": want debug, info, warn or error`) {
			t.Errorf("llmproxy %v: exit %d, stderr %q; want a usage error naming --log-level", args, code, stderr)
		}
	}
	t.Setenv("LLMPROXY_LOG_LEVEL", "loud")
	if code, _, stderr := runCLI(t, "replay", "--cassette", "x"); code != 2 || !strings.Contains(stderr, `LLMPROXY_LOG_LEVEL "loud"`) {
		t.Errorf("LLMPROXY_LOG_LEVEL=loud: exit %d, stderr %q; want a usage error naming the variable", code, stderr)
	}
}
