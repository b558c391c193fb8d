package main

import (
	"github.com/llmproxy/llmproxy/internal/exampletest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mockScenario answers hitBody's question with a text, then expects a
// second question no test child sends.
const mockScenario = `version: 1
name: quiz
steps:
  - id: first
    when: {latest-user: {equals: "question 0 MARKER"}}
    respond: {text: "answer 0"}
    then: second
  - id: second
    respond: {text: "answer 1"}
`

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMockCommandWrapper(t *testing.T) {
	exampletest.Unsetenv(t, "LLMPROXY_LISTEN")
	file := writeFile(t, "quiz.yaml", mockScenario)
	tests := []struct {
		name   string
		role   string
		flags  []string
		code   int
		stderr []string
	}{
		{"hit", "post=" + hitBody, nil, 0, nil},
		{"miss", "post=" + missBody, nil, 3, []string{"1 request(s) missed:", `scenario quiz, conversation "auto-`, `(read from the request: at the start): no step answers the request: step "first": latest-user`}},
		{"unused", "post=" + hitBody, []string{"--fail-on-unused"}, 3, []string{"--fail-on-unused: 1 step never reached:", "scenario quiz: second"}},
		// @ai-sdk/anthropic with a base URL lacking /v1: a path no wire
		// knows is a request mock could not answer, so a miss.
		{"unknown path", "postpath=/anthropic/messages|" + hitBody, nil, 3, []string{"1 request(s) missed:", "POST /anthropic/messages is not a chat API mock answers"}},
		{"not JSON", "postpath=/v1/chat/completions|{", nil, 3, []string{"1 request(s) missed:", "scenario quiz"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(childRole, tt.role)
			args := append([]string{"mock", "--scenario", file, "--pace", "instant"}, tt.flags...)
			code, stdout, stderr := cli(t, append(append(args, "--"), self(t))...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout %s\nstderr %s", code, tt.code, stdout, stderr)
			}
			if !strings.Contains(stdout, "status 200") && tt.code == 0 {
				t.Errorf("the child saw no 200: %s", stdout)
			}
			for _, s := range tt.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
		})
	}
}

func TestMockCommandRefusesBadScenario(t *testing.T) {
	bad := writeFile(t, "bad.yaml", "version: 1\nsteps:\n  - id: a\n    respond: {text: hi}\n    colour: red\n")
	code, stdout, stderr := runCLI(t, "mock", "--scenario", bad, "--listen", "127.0.0.1:0")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(stderr, bad+":5: ") || !strings.Contains(stderr, "colour") {
		t.Errorf("stderr lacks the FILE:LINE problem:\n%s", stderr)
	}
	if strings.Contains(stdout+stderr, "listening") {
		t.Errorf("a bad scenario was served:\n%s%s", stdout, stderr)
	}
	// scenario check says the same.
	_, checked, _ := runCLI(t, "scenario", "check", bad)
	if first := strings.SplitN(strings.TrimSpace(checked), "\n", 2)[0]; !strings.Contains(stderr, first) {
		t.Errorf("check says %q, mock says:\n%s", first, stderr)
	}
}

func TestMockCommandUsage(t *testing.T) {
	file := writeFile(t, "quiz.yaml", mockScenario)
	same := writeFile(t, "quiz.json", `{"version":1,"name":"quiz","steps":[{"respond":{"text":"x"}}]}`)
	tests := []struct {
		args []string
		code int
		says string
	}{
		{[]string{"mock", "--scenario", file, "--pace", "recorded"}, 2, `--pace "recorded": want scripted or instant`},
		{[]string{"mock", "--scenario", file, "--cassette", "x"}, 2, "cassette"},
		{[]string{"mock", "--scenario", file, "--scenario", same, "--listen", "127.0.0.1:0"}, 1, `scenario "quiz" is also`},
		{[]string{"mock", "--scenario", file + ".missing", "--listen", "127.0.0.1:0"}, 1, ".missing"},
	}
	for _, tt := range tests {
		code, _, stderr := runCLI(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.says) {
			t.Errorf("%v: exit %d, stderr %q; want %d saying %q", tt.args, code, stderr, tt.code, tt.says)
		}
	}
}
