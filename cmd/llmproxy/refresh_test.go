package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/exampletest"
	"github.com/llmproxy/llmproxy/internal/fake"
)

// refreshTurns is how many requests the refresh tests' agent sends: four
// tool calls, then the answer.
const refreshTurns = 5

// refreshTools are the tools the model calls, one a turn.
var refreshTools = []string{"search_flights", "check_weather", "book_hotel", "send_invoice"}

// refreshUpstream answers the refresh agent on OpenAI's Chat Completions
// wire (fake.OpenAIChat writes the bytes): with k tool results in the
// history it calls tool k, and with four it answers.
func refreshUpstream(t *testing.T, opts ...fake.Option) *fake.Upstream {
	return fake.New(t, fake.ScriptFunc(func(req *fake.Request) *fake.Response {
		k := int(gjson.GetBytes(req.Body, `messages.#(role=="tool")#`).Get("#").Int())
		if k < len(refreshTools) {
			loop := fake.ToolLoop{Tool: refreshTools[k], Args: fmt.Sprintf(`{"step":%d}`, k+1), CallID: fmt.Sprintf("call_%d", k+1)}
			body, _ := sjson.SetRawBytes(req.Body, "messages", []byte(`[{"role":"user","content":"go"}]`))
			r := *req
			r.Body = body
			return fake.OpenAIChat(loop).Respond(&r)
		}
		loop := fake.ToolLoop{Tool: "done", Answer: "Booked: flight, hotel, invoice sent."}
		body, _ := sjson.SetRawBytes(req.Body, "messages", []byte(`[{"role":"tool","tool_call_id":"x","content":"ok"}]`))
		r := *req
		r.Body = body
		return fake.OpenAIChat(loop).Respond(&r)
	}), opts...)
}

// refreshAgent runs the five turns through the official openai-go client.
// turn2 is the instruction the application adds with the first tool result:
// changing it changes turn 2's request, and so every later one.
func refreshAgent(ctx context.Context, base, opening, turn2 string) (string, error) {
	client := openai.NewClient(openaioption.WithBaseURL(base+"/v1"), openaioption.WithAPIKey("sk-test-refresh"), openaioption.WithMaxRetries(0))
	var tools []openai.ChatCompletionToolUnionParam
	for _, name := range refreshTools {
		tools = append(tools, openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: name, Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"step": map[string]any{"type": "integer"}}},
		}))
	}
	msgs := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("You are a travel agent. Use the tools in order."),
		openai.UserMessage(opening),
	}
	for turn := 1; turn <= refreshTurns; turn++ {
		c, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: msgs, Tools: tools})
		if err != nil {
			return "", fmt.Errorf("turn %d: %w", turn, err)
		}
		m := c.Choices[0].Message
		if len(m.ToolCalls) == 0 {
			return m.Content, nil
		}
		msgs = append(msgs, m.ToParam())
		for _, tc := range m.ToolCalls {
			msgs = append(msgs, openai.ToolMessage(fmt.Sprintf(`{"tool":%q,"ok":true}`, tc.Function.Name), tc.ID))
		}
		if turn == 1 {
			msgs = append(msgs, openai.UserMessage(turn2))
		}
	}
	return "", fmt.Errorf("no answer after %d turns", refreshTurns)
}

// serveAgent runs llmproxy with args, the agent against it (turn2 its
// turn-2 prompt), then stops it with SIGTERM; it returns the exit code and
// stderr.
func serveAgent(t *testing.T, bin string, upstream string, turn2 string, args ...string) (int, string) {
	t.Helper()
	return serveAgents(t, bin, upstream, map[string]string{"Plan my trip to Lyon.": turn2}, args...)
}

// serveAgents is serveAgent for several agents at once, by opening prompt.
func serveAgents(t *testing.T, bin string, upstream string, agents map[string]string, args ...string) (int, string) {
	t.Helper()
	args = append(args, "--listen", "127.0.0.1:0", "--upstream", upstream)
	p := startProc(t, bin, true, args...)
	errs := make(chan error, len(agents))
	for opening, turn2 := range agents {
		go func() {
			answer, err := refreshAgent(context.Background(), p.base, opening, turn2)
			if err == nil && answer != "Booked: flight, hotel, invoice sent." {
				err = fmt.Errorf("agent answered %q", answer)
			}
			errs <- err
		}()
	}
	for range agents {
		if err := <-errs; err != nil {
			t.Errorf("llmproxy %s: agent: %v", strings.Join(args, " "), err)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code := p.wait(t)
	if t.Failed() {
		t.Fatalf("stderr:\n%s", p.stderr)
	}
	return code, p.stderr.String()
}

// cassetteTurns lists, per interaction in order, its request's message
// count and turn-2 prompt.
func cassetteTurns(t *testing.T, path string) []string {
	t.Helper()
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []string
	err = c.ForEach(func(i *cassette.Interaction) error {
		out = append(out, gjson.Get(string(i.Request.Body), "messages.#").String()+":"+gjson.Get(string(i.Request.Body), "messages.4.content").String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRefreshReRecordsFromDivergence: a five-turn tool-using conversation
// recorded through openai-go; the application changes its turn-2 prompt;
// auto --refresh replays turn 1, records turns 2 to 5 (the upstream sees
// four requests), drops the four superseded ones, and the next replay
// passes with nothing unused. A second refresh killed with SIGKILL after
// recording leaves the cassette byte for byte, and no file beside it.
func TestRefreshReRecordsFromDivergence(t *testing.T) {
	bin := exampletest.BuildLLMProxy(t)
	u := refreshUpstream(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.cassette")

	if code, stderr := serveAgent(t, bin, u.URL(), "Book the cheapest flight.", "auto", "--cassette", path); code != 0 {
		t.Fatalf("auto: exit %d\n%s", code, stderr)
	}
	if u.Hits() != refreshTurns {
		t.Fatalf("recording: upstream saw %d requests, want %d", u.Hits(), refreshTurns)
	}
	before := cassetteTurns(t, path)

	code, stderr := serveAgent(t, bin, u.URL(), "Book the fastest flight.", "auto", "--refresh", "--cassette", path)
	if code != 0 {
		t.Fatalf("auto --refresh: exit %d\n%s", code, stderr)
	}
	if got := u.Hits() - refreshTurns; got != 4 {
		t.Errorf("refresh: upstream saw %d requests, want 4 (turns 2 to 5)", got)
	}
	want := "conversation 1 (interactions 1-5, 5 turns): kept 1 turn, re-recorded from turn 2 (4 turns), dropped 4"
	if !strings.Contains(stderr, want) {
		t.Errorf("refresh summary lacks %q:\n%s", want, stderr)
	}
	after := cassetteTurns(t, path)
	if len(after) != refreshTurns || after[0] != before[0] {
		t.Fatalf("after the refresh the cassette holds %q, want turn 1 kept (%q) and four new turns", after, before[0])
	}
	for k := 1; k < refreshTurns; k++ {
		if after[k] == before[k] {
			t.Errorf("turn %d was not re-recorded: %q", k+1, after[k])
		}
	}

	// The next replay passes, with nothing unused.
	if code, stderr := serveAgent(t, bin, u.URL(), "Book the fastest flight.", "replay", "--fail-on-unused", "--cassette", path); code != 0 {
		t.Fatalf("replay after the refresh: exit %d\n%s", code, stderr)
	}

	// A refresh killed mid-run leaves the cassette as it was.
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hits := u.Hits()
	p := startProc(t, bin, true, "auto", "--refresh", "--cassette", path, "--listen", "127.0.0.1:0", "--upstream", u.URL())
	if _, err := refreshAgent(context.Background(), p.base, "Plan my trip to Lyon.", "Book a train instead."); err != nil {
		t.Fatalf("agent: %v\n%s", err, p.stderr)
	}
	if u.Hits()-hits != 4 {
		t.Fatalf("the killed refresh recorded %d requests, want 4", u.Hits()-hits)
	}
	p.kill(t)
	now, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(now, old) {
		t.Errorf("a refresh killed with SIGKILL changed the cassette (%d bytes, were %d)", len(now), len(old))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the killed refresh left files beside the cassette: %q", names)
	}
}

// TestRefreshTwoConversationsAtOnce: two conversations whose turn 2
// changed, refreshed by agents running at once, are each re-recorded from
// turn 2; the replay after uses every interaction.
func TestRefreshTwoConversationsAtOnce(t *testing.T) {
	bin := exampletest.BuildLLMProxy(t)
	u := refreshUpstream(t)
	path := filepath.Join(t.TempDir(), "agents.cassette")
	before := map[string]string{"Plan my trip to Lyon.": "Book the cheapest flight.", "Plan my trip to Nice.": "Book the cheapest flight."}
	if code, stderr := serveAgents(t, bin, u.URL(), before, "auto", "--cassette", path); code != 0 {
		t.Fatalf("auto: exit %d\n%s", code, stderr)
	}
	after := map[string]string{"Plan my trip to Lyon.": "Book the fastest flight.", "Plan my trip to Nice.": "Book a night train."}
	code, stderr := serveAgents(t, bin, u.URL(), after, "auto", "--refresh", "--cassette", path)
	if code != 0 {
		t.Fatalf("auto --refresh: exit %d\n%s", code, stderr)
	}
	if got := u.Hits() - 2*refreshTurns; got != 8 {
		t.Errorf("refresh: upstream saw %d requests, want 8", got)
	}
	if n := strings.Count(stderr, "kept 1 turn, re-recorded from turn 2 (4 turns), dropped 4"); n != 2 {
		t.Errorf("the summary names %d conversations re-recorded from turn 2, want 2:\n%s", n, stderr)
	}
	if got := len(cassetteTurns(t, path)); got != 2*refreshTurns {
		t.Errorf("the refreshed cassette holds %d interactions, want %d", got, 2*refreshTurns)
	}
	if code, stderr := serveAgents(t, bin, u.URL(), after, "replay", "--fail-on-unused", "--cassette", path); code != 0 {
		t.Fatalf("replay after the refresh: exit %d\n%s", code, stderr)
	}
}

// TestRefreshUpstreamFails: a refresh whose upstream refuses records
// nothing, so it drops nothing: the cassette stays byte for byte.
func TestRefreshUpstreamFails(t *testing.T) {
	bin := exampletest.BuildLLMProxy(t)
	u := refreshUpstream(t)
	path := filepath.Join(t.TempDir(), "agent.cassette")
	if code, stderr := serveAgent(t, bin, u.URL(), "Book the cheapest flight.", "auto", "--cassette", path); code != 0 {
		t.Fatalf("auto: exit %d\n%s", code, stderr)
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := startProc(t, bin, true, "auto", "--refresh", "--cassette", path, "--listen", "127.0.0.1:0", "--upstream", closedPort(t))
	if _, err := refreshAgent(context.Background(), p.base, "Plan my trip to Lyon.", "Book the fastest flight."); err == nil || !strings.Contains(err.Error(), "turn 2") {
		t.Fatalf("agent through a refused upstream: %v, want turn 2 to fail", err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr)
	}
	if !strings.Contains(p.stderr.String(), "nothing re-recorded, the cassette is unchanged") {
		t.Errorf("stderr does not say the cassette is unchanged:\n%s", p.stderr)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, old) {
		t.Errorf("a refresh whose upstream failed changed the cassette")
	}
}

func TestRefreshUsageErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.cassette")
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"replay", "--refresh", "--cassette", path}, 2, "refresh"},
		{[]string{"mock", "--refresh", "--scenario", path}, 2, "refresh"},
		{[]string{"auto", "--prune", "--cassette", path}, 2, "--prune drops what a --refresh run did not use"},
		{[]string{"record", "--prune", "--cassette", path}, 2, "--prune drops what a --refresh run did not use"},
		{[]string{"auto", "--refresh", "--cassette-dir", dir}, 2, "it does not take --cassette-dir"},
		{[]string{"record", "--refresh", "--overwrite", "--cassette", path}, 2, "give one"},
		{[]string{"auto", "--refresh", "--cassette", path, "--listen", "127.0.0.1:0"}, 1, "nothing to refresh"},
	}
	for _, tc := range tests {
		code, _, stderr := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("llmproxy %s: exit %d, stderr %q; want exit %d naming %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.want)
		}
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("a refused refresh created %s", path)
	}
}

// TestRefreshUnderCommand: auto --refresh -- CMD applies the refresh once
// CMD exits and says so on stderr.
func TestRefreshUnderCommand(t *testing.T) {
	u := refreshUpstream(t)
	path := filepath.Join(t.TempDir(), "agent.cassette")
	t.Setenv(childRole, "refresh=Book the cheapest flight.")
	if code, _, stderr := runCLI(t, "auto", "--cassette", path, "--upstream", u.URL(), "--", self(t)); code != 0 {
		t.Fatalf("auto -- CMD: exit %d\n%s", code, stderr)
	}
	t.Setenv(childRole, "refresh=Book the fastest flight.")
	code, _, stderr := runCLI(t, "auto", "--refresh", "--cassette", path, "--upstream", u.URL(), "--", self(t))
	if code != 0 {
		t.Fatalf("auto --refresh -- CMD: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "kept 1 turn, re-recorded from turn 2 (4 turns), dropped 4") || u.Hits() != refreshTurns+4 {
		t.Errorf("upstream saw %d requests, want %d; stderr:\n%s", u.Hits(), refreshTurns+4, stderr)
	}
	if code, _, stderr := runCLI(t, "replay", "--fail-on-unused", "--cassette", path, "--", self(t)); code != 0 {
		t.Fatalf("replay -- CMD after the refresh: exit %d\n%s", code, stderr)
	}
}

// TestRefreshHoldsTheWriterLock: while a refresh runs, another refresh or
// auto of its cassette is refused as locked, and an empty file is no
// cassette to refresh (and stays empty).
func TestRefreshHoldsTheWriterLock(t *testing.T) {
	bin := exampletest.BuildLLMProxy(t)
	u := refreshUpstream(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.cassette")
	if code, stderr := serveAgent(t, bin, u.URL(), "Book the cheapest flight.", "auto", "--cassette", path); code != 0 {
		t.Fatalf("auto: exit %d\n%s", code, stderr)
	}
	p := startProc(t, bin, true, "auto", "--refresh", "--cassette", path, "--listen", "127.0.0.1:0", "--upstream", u.URL())
	for _, args := range [][]string{{"auto", "--refresh"}, {"auto"}} {
		args = append(args, "--cassette", path, "--lock-timeout", "100ms", "--listen", "127.0.0.1:0")
		if code, _, stderr := runCLI(t, args...); code != 1 || !strings.Contains(stderr, "another process") {
			t.Errorf("llmproxy %s during a refresh: exit %d, %q; want 1 saying another process holds it", strings.Join(args, " "), code, stderr)
		}
	}
	p.kill(t)

	empty := filepath.Join(dir, "empty.cassette")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "auto", "--refresh", "--cassette", empty, "--listen", "127.0.0.1:0"); code != 1 || !strings.Contains(stderr, "empty file") {
		t.Errorf("auto --refresh on an empty file: exit %d, %q", code, stderr)
	}
	if st, _ := os.Stat(empty); st.Size() != 0 {
		t.Errorf("the empty file is %d bytes now", st.Size())
	}
}
