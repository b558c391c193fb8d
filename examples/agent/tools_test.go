package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmproxy/llmproxy/examples/agent"
	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/wire"
)

// TestLocalTools runs the real tools: they write and run, and answer with
// results (or error envelopes) that satisfy the presets' schemas.
func TestLocalTools(t *testing.T) {
	dir := t.TempDir()
	tools := agent.LocalTools{Dir: dir}
	cases := []struct {
		name, args string
		isError    bool
		check      func(t *testing.T)
	}{
		{"write_file", `{"path":"a.txt","content":"hello"}`, false, func(t *testing.T) {
			if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "hello" {
				t.Errorf("a.txt = %q, %v", b, err)
			}
		}},
		{"write_file", `{"path":"a.txt","content":" again","append":true}`, false, func(t *testing.T) {
			if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "hello again" {
				t.Errorf("a.txt = %q after append", b)
			}
		}},
		{"write_file", `{"path":"../escape.txt","content":"x"}`, true, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(dir, "..", "escape.txt")); err == nil {
				t.Error("write_file wrote outside its directory")
			}
		}},
		{"write_file", `{"path":"a.txt"}`, true, nil},
		{"shell", `{"command":"echo ran > marker && echo out && echo err >&2"}`, false, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(dir, "marker")); err != nil {
				t.Errorf("the command did not run: %v", err)
			}
		}},
		{"shell", `{"command":"exit 3"}`, false, nil},
	}
	for _, tc := range cases {
		res, err := tools.Execute(context.Background(), wire.ToolCall{ID: "call_1", Name: tc.name, Arguments: []byte(tc.args)})
		if err != nil {
			t.Fatalf("%s %s: %v", tc.name, tc.args, err)
		}
		d, _ := presets.Lookup(tc.name)
		validate := d.ValidateResult
		if tc.isError {
			validate = d.ValidateError
		}
		if res.IsError != tc.isError {
			t.Errorf("%s %s: isError %t, want %t (%s)", tc.name, tc.args, res.IsError, tc.isError, res.Content)
		}
		if err := validate(res.Content); err != nil {
			t.Errorf("%s %s: result %s: %v", tc.name, tc.args, res.Content, err)
		}
		if tc.check != nil {
			tc.check(t)
		}
	}
	if _, err := tools.Execute(context.Background(), wire.ToolCall{ID: "call_2", Name: "rm"}); err == nil {
		t.Error("an unknown tool ran")
	}
}
