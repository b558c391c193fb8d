package main

import (
	"io"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/proxy"
)

// TestParseSize: a size is plain bytes or a number with a unit, decimal
// (KB, MB, GB: powers of 1000) or binary (KiB, MiB, GiB: powers of 1024),
// the unit's letters in any case; anything else is an error.
func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"1048576", 1 << 20},
		{"512B", 512},
		{"32MiB", 32 << 20},
		{"32mib", 32 << 20},
		{"32 MiB", 32 << 20},
		{"1KB", 1000},
		{"1kb", 1000},
		{"1KiB", 1024},
		{"2GB", 2_000_000_000},
		{"1GiB", 1 << 30},
		{"1.5MiB", 3 << 19},
		{"0.5KB", 500},
		{"8589934591GiB", 8589934591 << 30},
	} {
		got, err := parseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", "empty"},
		{"-1", "negative"},
		{"-1MiB", "negative"},
		{"32MiBx", "unit"},
		{"32M", "unit"},
		{"32 mb b", "unit"},
		{"1.5.2MB", "number"},
		{"1.x", "number"},
		{".MB", "number"},
		{"0.1B", "whole number of bytes"},
		{"1.0001KiB", "whole number of bytes"},
		{"9223372036854775808", "too large"},
		{"8589934592GiB", "too large"},
		{"99999999999999999999GB", "too large"},
		{"MiB", "number"},
		{"1e6", "unit"},
		{"0x10", "unit"},
	} {
		if got, err := parseSize(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseSize(%q) = %d, %v; want an error saying %q", tc.in, got, err, tc.want)
		}
	}
}

// TestFormatSize: a size prints in the largest unit it is a whole number
// of, binary first, and parses back to itself.
func TestFormatSize(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0"},
		{512, "512B"},
		{32 << 20, "32MiB"},
		{256 << 20, "256MiB"},
		{3 << 19, "1536KiB"},
		{1 << 30, "1GiB"},
		{1000, "1KB"},
		{2_000_000_000, "2GB"},
		{1001, "1001B"},
	} {
		got := formatSize(tc.in)
		if got != tc.want {
			t.Errorf("formatSize(%d) = %q; want %q", tc.in, got, tc.want)
		}
		if back, err := parseSize(got); err != nil || back != tc.in {
			t.Errorf("parseSize(formatSize(%d)) = %d, %v", tc.in, back, err)
		}
	}
}

// TestSizeFlags: every size flag of every command takes units, on the
// command line and from its LLMPROXY_ variable; a bad value is a usage
// error naming the flag or the variable; the help prints the defaults in
// the unit a person reads.
func TestSizeFlags(t *testing.T) {
	path := demoCopy(t)
	for _, tc := range []struct {
		args []string
		env  [2]string
		want string
	}{
		{args: []string{"replay", "--cassette", path, "--max-body", "1.5x"}, want: "--max-body"},
		{args: []string{"record", "--cassette", path, "--max-response", "-1MiB"}, want: "--max-response"},
		{args: []string{"auto", "--cassette", path, "--max-body-total", "99999999999GiB"}, want: "--max-body-total"},
		{args: []string{"replay", "--cassette", path}, env: [2]string{"LLMPROXY_MAX_BODY", "32MB!"}, want: "LLMPROXY_MAX_BODY"},
		{args: []string{"mock", "--scenario", "x.yaml", "--max-body", "1.5.2KB"}, want: "--max-body"},
		{args: []string{"replay", "--cassette", path, "--max-body", "0B"}, want: "--max-body 0: must be positive"},
	} {
		if tc.env[0] != "" {
			t.Setenv(tc.env[0], tc.env[1])
		}
		code, stderr := runBriefly(t, append(tc.args, "--listen", "127.0.0.1:0")...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("llmproxy %s (env %v): exit %d, stderr %q; want exit 2 naming %s", strings.Join(tc.args, " "), tc.env, code, stderr, tc.want)
		}
		if tc.env[0] != "" {
			t.Setenv(tc.env[0], "")
		}
	}
	// Units are taken: with a tiny --max-body from the environment, a
	// serving command starts and refuses nothing at startup.
	c := serveConfig{mode: proxy.ModeReplay}
	fs := c.flags("replay", io.Discard)
	if err := parseFlags(fs, []string{"--max-body-total", "2MB"}, func(n string) string {
		if n == "LLMPROXY_MAX_BODY" {
			return "1KiB"
		}
		return ""
	}); err != nil || c.maxBody != 1024 || c.maxBodyTotal != 2_000_000 {
		t.Errorf("--max-body-total 2MB with LLMPROXY_MAX_BODY=1KiB: max-body %d, max-body-total %d, %v; want 1024, 2000000", c.maxBody, c.maxBodyTotal, err)
	}
	for _, name := range []string{"record", "mock"} {
		_, help, _ := runCLI(t, name, "-h")
		if !strings.Contains(help, "(default 32MiB)") || strings.Contains(help, "33554432") {
			t.Errorf("llmproxy %s -h prints --max-body's default as bytes:\n%s", name, help)
		}
	}
	if _, help, _ := runCLI(t, "record", "-h"); !strings.Contains(help, "(default 256MiB)") {
		t.Errorf("llmproxy record -h does not print --max-response's default as 256MiB:\n%s", help)
	}
}
