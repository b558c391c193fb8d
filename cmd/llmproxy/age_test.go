package main

import (
	"github.com/llmproxy/llmproxy/internal/exampletest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseAge(t *testing.T) {
	good := map[string]time.Duration{"90d": 90 * 24 * time.Hour, "36h": 36 * time.Hour, "90m": 90 * time.Minute, "45s": 45 * time.Second, "1d12h": 36 * time.Hour}
	for v, want := range good {
		if got, err := parseAge(v); err != nil || got != want {
			t.Errorf("parseAge(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"", "d", "x", "0d", "-1h", "1.5d", "90", "3w", "1d-30h"} {
		if got, err := parseAge(v); err == nil {
			t.Errorf("parseAge(%q) = %v, want an error", v, got)
		}
	}
}

// TestMaxAge: interactions older than --max-age are one warning line on
// stderr, or with --strict-age a startup failure naming them; the
// cassettes of sampleCassette were recorded on 2026-01-02.
func TestMaxAge(t *testing.T) {
	exampletest.Unsetenv(t, "LLMPROXY_LISTEN")
	dir := t.TempDir()
	cas := filepath.Join(dir, "old.cassette")
	sampleCassette(t, cas, 3)
	t.Setenv(childRole, "exit=0")
	child := []string{"--", self(t)}
	tests := []struct {
		name   string
		flags  []string
		code   int
		want   []string
		absent []string
	}{
		{"warn", []string{"--max-age", "90d"}, 0,
			[]string{"llmproxy: warning: 3 interaction(s) recorded more than 90d ago (--max-age); the oldest is interaction 1 of " + cas + ", recorded 2026-01-02T03:04:00Z ("}, nil},
		{"strict", []string{"--max-age", "90d", "--strict-age"}, 1,
			[]string{"llmproxy: 3 interaction(s) recorded more than 90d ago (--max-age, --strict-age): " + cas + ": interaction(s) 1, 2, 3; the oldest is interaction 1", "re-record them or raise --max-age"},
			[]string{"listening", "report of the run"}},
		{"young enough", []string{"--max-age", "20000d", "--strict-age"}, 0, nil, []string{"warning", "recorded more than"}},
		{"strict alone", []string{"--strict-age"}, 2, []string{"--strict-age: needs --max-age"}, nil},
		{"bad age", []string{"--max-age", "soon"}, 2, []string{`"soon": want a duration such as 90d`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(append([]string{"replay", "--cassette", cas}, tt.flags...), child...)
			code, _, stderr := cli(t, args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d:\n%s", code, tt.code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, w := range tt.absent {
				if strings.Contains(stderr, w) {
					t.Errorf("stderr holds %q:\n%s", w, stderr)
				}
			}
			if n := strings.Count(stderr, "recorded more than"); n > 1 {
				t.Errorf("%d lines about old interactions, want one:\n%s", n, stderr)
			}
		})
	}
	// With --cassette-dir every cassette of the directory is checked, in
	// one line; LLMPROXY_MAX_AGE sets the flag.
	other := t.TempDir()
	sampleCassette(t, filepath.Join(other, "a.cassette"), 2)
	sampleCassette(t, filepath.Join(other, "b.cassette"), 1)
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("not a cassette"), 0o644)
	t.Setenv("LLMPROXY_MAX_AGE", "30d")
	code, _, stderr := cli(t, append([]string{"auto", "--cassette-dir", other}, child...)...)
	if code != 0 || !strings.Contains(stderr, "warning: 3 interaction(s) recorded more than 30d ago (LLMPROXY_MAX_AGE)") {
		t.Errorf("exit %d:\n%s", code, stderr)
	}
}
