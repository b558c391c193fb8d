package main

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
)

// TestLsEscapesControlCharacters lists a cassette whose recorded names —
// an upstream name, a path, a tool call's name and id, its arguments — hold
// terminal escape sequences, a bell, a tab and a bidirectional override.
// ls shows each such field quoted with the characters escaped, so nothing
// reaches the terminal to act on; ordinary fields print as they are.
func TestLsEscapesControlCharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hostile.cassette")
	c, err := cassette.Open(path, cassette.Options{Version: version})
	if err != nil {
		t.Fatal(err)
	}
	answer := `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,` +
		`"tool_calls":[{"id":"call_\u202eevil","type":"function","function":{"name":"get\u001b[31mweather","arguments":"{\"city\":\"Paris\u0007\"}"}}]},"finish_reason":"tool_calls"}]}`
	i := &cassette.Interaction{Upstream: "evil\x1b[2J", Provider: "openai", Kind: "openai-chat",
		Request:  cassette.Request{Method: "POST", Path: "/v1/\x1b]0;owned\x07chat\tcompletions", Headers: http.Header{"Content-Type": {"application/json"}}, Body: cassette.Body(`{"model":"gpt-4o-mini","messages":[]}`)},
		Response: cassette.Response{Status: 200, Headers: http.Header{"Content-Type": {"application/json"}}, Body: cassette.Body(answer)},
	}
	m, err := cassette.DefaultIndexer()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Replace(&cassette.Contents{Interactions: []*cassette.Interaction{i}}, m.Keys); err != nil {
		t.Fatal(err)
	}
	c.Close()

	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"ls", "--cassette", path}, &out, &errb); code != 0 {
		t.Fatalf("ls exited %d: %s", code, errb.String())
	}
	for _, bad := range []string{"\x1b", "\x07", "\u202e"} {
		if strings.Contains(out.String(), bad) {
			t.Errorf("ls printed %q verbatim:\n%q", bad, out.String())
		}
	}
	for _, want := range []string{
		`"/evil\x1b[2J/v1/\x1b]0;owned\achat\tcompletions"`,
		`get\x1b[31mweather`, `call_\u202eevil`, `Paris\\u0007`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("ls output does not show %s:\n%s", want, out.String())
		}
	}
	lines := strings.Split(out.String(), "\n")
	if f := strings.Fields(lines[1]); len(f) < 4 || strings.Join(f[:4], " ") != "1 openai openai-chat POST" {
		t.Errorf("the ordinary fields are not shown as they are: %q", lines[1])
	}
}
