package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/internal/exampletest"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/proxy/proxytest"
	"github.com/llmproxy/llmproxy/wire"
)

// diffConv is one scripted conversation of an OpenAI chat application: its
// opening, what it offers, and the model's answer turn by turn (an answer
// that calls tools leads to another request carrying their results).
type diffConv struct {
	prompt, system string
	tools          []string
	structured     bool // asks for a JSON schema output
	stream         bool
	answers        []diffAnswer
}

// diffAnswer is one scripted answer; status ≥ 400 answers with an error.
type diffAnswer struct {
	wire.Answer
	status int
}

func say(text string) diffAnswer {
	return diffAnswer{Answer: wire.Answer{Text: text, Finish: wire.FinishStop}}
}

func callTool(id, name, args string) diffAnswer {
	return diffAnswer{Answer: wire.Answer{ToolCalls: []wire.ToolCall{{ID: id, Name: name, Arguments: []byte(args)}}, Finish: wire.FinishToolCalls}}
}

// recordDiffCassette records the conversations through a recording proxy
// in front of a fake OpenAI that answers each from its script, and
// returns the cassette's path.
func recordDiffCassette(t *testing.T, path string, convs []diffConv) string {
	t.Helper()
	byPrompt := map[string]diffConv{}
	for _, c := range convs {
		byPrompt[c.prompt] = c
	}
	up := fake.New(t, fake.ScriptFunc(func(r *fake.Request) *fake.Response {
		body := r.Body
		c := byPrompt[gjson.GetBytes(body, `messages.#(role=="user").content`).String()]
		turn := int(gjson.GetBytes(body, `messages.#(role=="assistant")#`).Get("#").Int())
		if turn >= len(c.answers) {
			return &fake.Response{Status: 500, Body: []byte(`{"error":{"message":"the script has no such turn"}}`)}
		}
		a := c.answers[turn]
		var w wire.Written
		var err error
		if a.status >= 400 {
			w, err = wire.WriteError(wire.KindOpenAIChat, wire.ErrorAnswer{Status: a.status, Message: a.Text})
		} else {
			opts, oerr := wire.OptionsFor(wire.KindOpenAIChat, "/v1/chat/completions", body)
			if oerr != nil {
				return &fake.Response{Status: 400, Body: []byte(oerr.Error())}
			}
			a.Model, a.ID = "gpt-test", fmt.Sprintf("chatcmpl-%s-%d", filepath.Base(path), turn)
			w, err = wire.Write(wire.KindOpenAIChat, a.Answer, opts)
		}
		if err != nil {
			return &fake.Response{Status: 500, Body: []byte(err.Error())}
		}
		resp := &fake.Response{Status: w.Status, Header: w.Header, Body: w.Body}
		for _, e := range w.Events {
			resp.Events = append(resp.Events, e.Raw)
		}
		return resp
	}))
	rec, err := proxytest.Start(path, proxytest.Mode(proxy.ModeRecord), proxytest.Upstream("openai", up.URL()))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range convs {
		if err := runDiffConv(rec.URL("openai")+"/v1/chat/completions", c); err != nil {
			t.Fatalf("conversation %q: %v", c.prompt, err)
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// runDiffConv plays a conversation as an application would: each answer's
// tool calls are echoed in the history with their results.
func runDiffConv(url string, c diffConv) error {
	var msgs []any
	if c.system != "" {
		msgs = append(msgs, map[string]any{"role": "system", "content": c.system})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": c.prompt})
	var tools []any
	for _, name := range c.tools {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": name, "parameters": map[string]any{"type": "object"}}})
	}
	for range len(c.answers) {
		req := map[string]any{"model": "gpt-test", "messages": msgs, "stream": c.stream}
		if len(tools) > 0 {
			req["tools"] = tools
		}
		if c.structured {
			req["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "verdict",
				"schema": map[string]any{"type": "object"}}}
		}
		body, _ := json.Marshal(req)
		resp, err := http.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode >= 400 {
			return nil // the application gives up
		}
		framing := wire.FramingNone
		if c.stream {
			framing = wire.FramingSSE
		}
		a, err := wire.ParseResponse(wire.KindOpenAIChat, framing, got)
		if err != nil {
			return err
		}
		if len(a.ToolCalls) == 0 {
			return nil
		}
		var calls []any
		for _, tc := range a.ToolCalls {
			calls = append(calls, map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": string(tc.Arguments)}})
		}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": a.Text, "tool_calls": calls})
		for _, tc := range a.ToolCalls {
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": tc.ID, "content": "result of " + tc.Name})
		}
	}
	return nil
}

// diffPair is the recording before and after, one conversation of each
// class.
func diffPair(t *testing.T) (old, new string) {
	weather := []string{"weather"}
	paris := `{"city":"Paris"}`
	base := []diffConv{
		{prompt: "identical: weather in Paris?", tools: weather, answers: []diffAnswer{callTool("call_a", "weather", paris), say("Sunny.")}},
		{prompt: "wording: say hello", answers: []diffAnswer{say("Hello there.")}},
		{prompt: "arguments: weather in Lyon?", tools: weather, stream: true, answers: []diffAnswer{callTool("call_b", "weather", `{"city":"Lyon","unit":"C"}`), say("Mild.")}},
		{prompt: "renamed: forecast?", tools: []string{"weather", "forecast"}, answers: []diffAnswer{callTool("call_c", "weather", paris), say("Rain.")}},
		{prompt: "finish: write a long poem", answers: []diffAnswer{say("Roses are red")}},
		{prompt: "structured: approve?", structured: true, answers: []diffAnswer{say(`{"approved":true,"reason":"fine"}`)}},
		{prompt: "error: anything?", answers: []diffAnswer{say("Something.")}},
		{prompt: "request: be brief", system: "You are terse.", answers: []diffAnswer{say("OK.")}},
		{prompt: "fewer turns: weather in Nice?", tools: weather, answers: []diffAnswer{callTool("call_d", "weather", `{"city":"Nice"}`), say("Warm.")}},
		{prompt: "removed: a test that was deleted", answers: []diffAnswer{say("Gone.")}},
	}
	changed := make([]diffConv, len(base))
	copy(changed, base)
	changed[0].answers = []diffAnswer{callTool("call_other_id", "weather", `{ "city" : "Paris" }`), say("Sunny.")}
	changed[1].answers = []diffAnswer{say("Hi there!")}
	changed[2].answers = []diffAnswer{callTool("call_b2", "weather", `{"city":"Lyon","unit":"F"}`), say("Mild.")}
	changed[3].answers = []diffAnswer{callTool("call_c", "forecast", paris), say("Rain.")}
	changed[4].answers = []diffAnswer{{Answer: wire.Answer{Text: "Roses are", Finish: wire.FinishLength}}}
	changed[5].answers = []diffAnswer{say(`{"approved":false,"reason":"not fine"}`)}
	changed[6].answers = []diffAnswer{{Answer: wire.Answer{Text: "overloaded"}, status: 503}}
	changed[7].system = "You are verbose."
	changed[8].answers = []diffAnswer{say("Warm, I think.")}
	changed[9] = diffConv{prompt: "added: a new test", tools: weather, answers: []diffAnswer{say("New.")}}
	dir := t.TempDir()
	return recordDiffCassette(t, filepath.Join(dir, "old.cassette"), base), recordDiffCassette(t, filepath.Join(dir, "new.cassette"), changed)
}

// TestDiffClasses: each conversation of the pair is classed as it was
// built to be, in every format, and the outputs are the goldens.
func TestDiffClasses(t *testing.T) {
	old, new := diffPair(t)
	want := map[string]string{
		"wording: say hello":               "wording",
		"arguments: weather in Lyon?":      "behaviour",
		"renamed: forecast?":               "behaviour",
		"finish: write a long poem":        "behaviour",
		"structured: approve?":             "behaviour",
		"error: anything?":                 "behaviour",
		"request: be brief":                "request",
		"fewer turns: weather in Nice?":    "behaviour",
		"removed: a test that was deleted": "removed",
		"added: a new test":                "added",
	}
	code, stdout, stderr := cli(t, "diff", old, new, "--format", "json")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	got := map[string]string{}
	for _, c := range gjson.Get(stdout, "conversations").Array() {
		got[c.Get("title").String()] = c.Get("class").String()
	}
	for title, class := range want {
		if got[title] != class {
			t.Errorf("%q: class %q, want %q", title, got[title], class)
		}
	}
	if _, ok := got["identical: weather in Paris?"]; ok || len(got) != len(want) {
		t.Errorf("conversations listed: %v", got)
	}
	whats := map[string]bool{}
	for _, d := range gjson.Get(stdout, "conversations.#.turns.#.differences|@flatten|@flatten").Array() {
		whats[d.Get("class").String()+" "+d.Get("what").String()+" "+d.Get("path").String()] = true
	}
	for _, w := range []string{
		"wording text response.text",
		"behaviour arguments response.tool_calls.0.arguments.unit",
		"behaviour tool call renamed response.tool_calls.0.name",
		"behaviour finish reason response.finish",
		"behaviour structured output response.output.approved",
		"wording structured output text response.output.reason",
		"behaviour error instead of an answer response.error",
		"request prompt request.messages.0.content",
		"behaviour tool call removed response.tool_calls.0",
	} {
		if !whats[w] {
			t.Errorf("no difference %q in %v", w, whats)
		}
	}
	for _, f := range []string{"text", "markdown", "json"} {
		_, out, _ := cli(t, "diff", old, new, "--format", f)
		out = strings.ReplaceAll(out, filepath.Dir(old)+string(filepath.Separator), "DIR/")
		golden(t, "diff/classes."+map[string]string{"text": "txt", "markdown": "md", "json": "json"}[f], []byte(out))
	}
}

// TestDiffFailOn: the gate counts the classes it names.
func TestDiffFailOn(t *testing.T) {
	dir := t.TempDir()
	hello := []diffConv{{prompt: "hello", answers: []diffAnswer{say("Hello.")}}}
	reworded := []diffConv{{prompt: "hello", answers: []diffAnswer{say("Hi!")}}}
	asked := []diffConv{{prompt: "hello", system: "Be kind.", answers: []diffAnswer{say("Hello.")}}}
	a := recordDiffCassette(t, filepath.Join(dir, "a.cassette"), hello)
	b := recordDiffCassette(t, filepath.Join(dir, "b.cassette"), reworded)
	c := recordDiffCassette(t, filepath.Join(dir, "c.cassette"), asked)
	for _, tc := range []struct {
		new, gate string
		code      int
	}{
		{a, "any", 0}, {a, "behaviour", 0},
		{b, "behaviour", 0}, {b, "wording", 1}, {b, "any", 1},
		{c, "behaviour", 0}, {c, "wording", 0}, {c, "any", 1},
	} {
		if code, _, stderr := cli(t, "diff", a, tc.new, "--fail-on", tc.gate); code != tc.code {
			t.Errorf("diff a %s --fail-on %s: exit %d, want %d\n%s", filepath.Base(tc.new), tc.gate, code, tc.code, stderr)
		}
	}
}

// TestDiffSelfIsIdentical: a cassette diffed with itself, and with its
// format-1 original (the storage format is not compared), is identical.
func TestDiffSelfIsIdentical(t *testing.T) {
	old, _ := diffPair(t)
	code, stdout, stderr := cli(t, "diff", old, old)
	if code != 0 || !strings.Contains(stdout, ": identical: 10 conversations, 14 turns") {
		t.Errorf("exit %d\n%s%s", code, stdout, stderr)
	}
	v1 := filepath.Join(t.TempDir(), "v1.cassette")
	data, err := os.ReadFile("../../cassette/testdata/v1.cassette")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(v1, data, 0o644)
	v2 := filepath.Join(t.TempDir(), "v2.cassette")
	os.WriteFile(v2, data, 0o644)
	if code, _, stderr := cli(t, "migrate", "--cassette", v2); code != 0 {
		t.Fatal(stderr)
	}
	if code, stdout, stderr := cli(t, "diff", v1, v2); code != 0 || !strings.Contains(stdout, "identical") {
		t.Errorf("format 1 against its migrated copy: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestDiffBadInput: every side that cannot be read, and every usage
// mistake, exits 2 with one line naming the side or flag.
func TestDiffBadInput(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.cassette")
	recordDiffCassette(t, good, []diffConv{{prompt: "hello", answers: []diffAnswer{say("Hello.")}}})
	text := writeFile(t, "notes.txt", "not a cassette\n")
	data, _ := os.ReadFile("../../cassette/testdata/v1.cassette")
	newer := filepath.Join(dir, "v3.cassette")
	os.WriteFile(newer, bytes.Replace(data, []byte(`"format_version":1`), []byte(`"format_version":3`), 1), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"one argument", []string{good}, "want two arguments"},
		{"three arguments", []string{good, good, good}, "want two arguments"},
		{"bad format", []string{good, good, "--format", "yaml"}, "--format"},
		{"bad gate", []string{good, good, "--fail-on", "tone"}, "--fail-on"},
		{"missing file", []string{filepath.Join(dir, "missing.cassette"), good}, "missing.cassette: no such file, and not a git revision"},
		{"not a cassette", []string{good, text}, "notes.txt"},
		{"newer format", []string{newer, good}, "format version 3"},
		{"bad revision", []string{"no-such-rev-xyz", good}, "no-such-rev-xyz: no such file, and not a git revision"},
		{"bad revision path", []string{"HEAD:no/such.cassette", good}, "HEAD:no/such.cassette"},
	} {
		code, _, stderr := cli(t, append([]string{"diff"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 naming %q", tc.name, code, stderr, tc.want)
		}
		if !strings.Contains(tc.name, "argument") {
			checkOneLine(t, tc.name, stderr)
		}
	}
	// Every unusable cassette file of the bad-input suite, on either side.
	for name, path := range badFiles(t, t.TempDir()) {
		for _, args := range [][]string{{path, good}, {good, path}} {
			code, stdout, stderr := cli(t, append([]string{"diff"}, args...)...)
			if code != 2 || !strings.Contains(stderr, path) || stdout != "" {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 naming the file and no output", name, code, stdout, stderr)
			}
			checkOneLine(t, name, stderr)
		}
	}
}

// TestDiffRevision: a bare revision is the other side's file in that
// revision, REV:PATH a file in it, read through git show.
func TestDiffRevision(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		exampletest.Skip(t, "git is not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	cas := filepath.Join(dir, "x.cassette")
	recordDiffCassette(t, cas, []diffConv{{prompt: "hello", answers: []diffAnswer{say("Hello.")}}})
	git("add", "x.cassette")
	git("commit", "-q", "-m", "record")
	os.Remove(cas)
	recordDiffCassette(t, cas, []diffConv{{prompt: "hello", answers: []diffAnswer{say("Hi!")}}})
	for _, old := range []string{"HEAD", "HEAD:x.cassette"} {
		t.Run(old, func(t *testing.T) {
			t.Chdir(dir)
			code, stdout, stderr := cli(t, "diff", old, "x.cassette")
			if code != 1 || !strings.Contains(stdout, `text response.text: "Hello." → "Hi!"`) {
				t.Errorf("exit %d\n%s%s", code, stdout, stderr)
			}
		})
	}
}
