package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scenarioTestdata is the scenario package's testdata.
const scenarioTestdata = "../../scenario/testdata"

// TestScenarioCheckFiles: for each file of the scenario package's check
// testdata, `scenario check` prints exactly the problems of its golden, as
// FILE:LINE: message, and exits 1.
func TestScenarioCheckFiles(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(scenarioTestdata, "check", "*.*"))
	n := 0
	for _, file := range files {
		if filepath.Ext(file) == ".err" {
			continue
		}
		n++
		t.Run(filepath.Base(file), func(t *testing.T) {
			want, err := os.ReadFile(strings.TrimSuffix(file, filepath.Ext(file)) + ".err")
			if err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runCLI(t, "scenario", "check", file)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if got := strings.ReplaceAll(stdout, filepath.Join(scenarioTestdata, "check")+"/", "testdata/check/"); got != string(want) {
				t.Errorf("stdout:\n%s\nwant:\n%s", got, want)
			}
			if !strings.HasPrefix(stderr, "llmproxy: scenario check: ") || !strings.Contains(stderr, "problem") {
				t.Errorf("stderr = %q", stderr)
			}
		})
	}
	if n < 10 {
		t.Fatalf("only %d check files", n)
	}
}

func TestScenarioCheckCLI(t *testing.T) {
	weather := filepath.Join(scenarioTestdata, "valid", "weather.yaml")
	everything := filepath.Join(scenarioTestdata, "valid", "everything.yaml")
	bad := filepath.Join(scenarioTestdata, "check", "unused-fixture.yaml")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // a line it contains
		stderr string
	}{
		{"valid files", []string{weather, everything}, 0, weather + ": ok (scenario weather: 2 steps, 1 fixture)\n" + everything + ": ok (scenario kitchen-sink: 5 steps, 2 fixtures)\n", ""},
		{"every file's problems", []string{bad, weather, filepath.Join(scenarioTestdata, "check", "version.yaml")}, 1,
			"version.yaml:1: version: 2 is not a known version", "llmproxy: scenario check: 2 problems\n"},
		{"one name twice", []string{weather, filepath.Join(scenarioTestdata, "valid", "weather.json")}, 1,
			`weather.json:3: name: scenario "weather" is also ` + weather + `'s`, "1 problem\n"},
		{"missing file", []string{"no/such.yaml"}, 1, "no/such.yaml: no such file or directory\n", "1 problem"},
		{"no file", nil, 2, "", "name at least one scenario file"},
		{"unknown flag", []string{"--strict", weather}, 2, "", "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"scenario", "check"}, tt.args...)...)
			if code != tt.code || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit %d, stdout with %q, stderr with %q", code, stdout, stderr, tt.code, tt.stdout, tt.stderr)
			}
		})
	}
	if code, _, stderr := runCLI(t, "scenario"); code != 2 || !strings.Contains(stderr, "scenario check FILE") {
		t.Errorf("scenario alone: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "scenario", "play"); code != 2 || !strings.Contains(stderr, `unknown subcommand "play"`) {
		t.Errorf("scenario play: exit %d, %s", code, stderr)
	}
	if code, stdout, _ := runCLI(t, "scenario", "check", "-h"); code != 0 || !strings.HasPrefix(stdout, "llmproxy scenario check checks") {
		t.Errorf("check -h: exit %d, %s", code, stdout)
	}
}
