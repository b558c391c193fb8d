package main

// The example agent's shape on Ollama's native chat API (POST /api/chat),
// with plain net/http: there is no Ollama SDK among the module's
// dependencies. It speaks the API as Ollama documents it: tools in the
// OpenAI-chat-like shape, object arguments, NDJSON lines unless
// "stream": false, and each result sent back as a "tool" message naming
// its function. Clients differ in what they send back, and the agents
// cover them (ollamaClient): ollamaNameOnlyAgent echoes the assistant
// message it got and answers by tool_name alone, as the Ollama docs do;
// ollamaBareAgent also leaves the ids out of the echo, as a history built
// by hand, or by an ollama-python whose ToolCall has no id field, does; ollamaAgent sends the call's id back as tool_call_id too
// (the server accepts it, and some clients send it). Scrub keeps each
// recorded request the way the client sent it, so all three replay a
// cassette recorded from a server that gives calls ids; from an id-less
// recording only ollamaNameOnlyAgent does (docs/scrub.md, "Ollama clients").

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/examples/agent"
	"github.com/llmproxy/llmproxy/fixture"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/wire"
)

// ollamaModel is the model the Ollama agent asks for.
const ollamaModel = "llama3.2"

// ollamaRequest is the body of POST /api/chat.
type ollamaRequest struct {
	Model    string            `json:"model"`
	Messages []ollamaMessage   `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
	Stream   bool              `json:"stream"`
}

// ollamaMessage is one message of the conversation, sent or received.
type ollamaMessage struct {
	Role       string           `json:"role"`
	Content    string           `json:"content"`
	ToolCalls  []ollamaToolCall `json:"tool_calls,omitempty"`
	ToolName   string           `json:"tool_name,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
}

// ollamaToolCall is a call the model made. The id is absent from Ollama's
// documented calls; the current server, and a scrubbed cassette, add one.
type ollamaToolCall struct {
	ID       string `json:"id,omitempty"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// ollamaTools are the preset tools as Ollama tool definitions, which have
// the OpenAI chat shape {"type":"function","function":{…}}.
func ollamaTools() []json.RawMessage {
	var defs []json.RawMessage
	for _, d := range presetTools() {
		defs = append(defs, d.OpenAIChatTool())
	}
	return defs
}

// ollamaClient is what an Ollama client sends back after a response with
// tool calls.
type ollamaClient struct {
	// echoIDs: the echoed assistant message keeps the calls' ids.
	echoIDs bool
	// sendIDs: a tool message carries its call's id, if it has one, as
	// tool_call_id, besides tool_name.
	sendIDs bool
}

// ollamaAgent runs one conversation on Ollama's chat API through a proxy at
// base, under its "ollama" upstream, answering each call by tool_name and,
// when the call has an id, by tool_call_id too. It returns the model's final
// text, or an error naming what failed: the HTTP exchange, the body, or a
// tool.
func ollamaAgent(ctx context.Context, base string, tools agent.Tools, prompt string, stream bool) (string, error) {
	return ollamaClient{echoIDs: true, sendIDs: true}.run(ctx, base, tools, prompt, stream)
}

// ollamaNameOnlyAgent is ollamaAgent as Ollama documents the client: each
// result goes back as {"role":"tool","content":…,"tool_name":…}, without
// tool_call_id, whether the call had an id or not.
func ollamaNameOnlyAgent(ctx context.Context, base string, tools agent.Tools, prompt string, stream bool) (string, error) {
	return ollamaClient{echoIDs: true}.run(ctx, base, tools, prompt, stream)
}

// ollamaBareAgent is ollamaNameOnlyAgent whose echo of the assistant
// message leaves out the calls' ids. It still hands each id to its tools,
// which fixture.Executor needs.
func ollamaBareAgent(ctx context.Context, base string, tools agent.Tools, prompt string, stream bool) (string, error) {
	return ollamaClient{}.run(ctx, base, tools, prompt, stream)
}

// run is the agents' loop.
func (cl ollamaClient) run(ctx context.Context, base string, tools agent.Tools, prompt string, stream bool) (string, error) {
	req := ollamaRequest{
		Model: ollamaModel, Tools: ollamaTools(), Stream: stream,
		Messages: []ollamaMessage{{Role: "user", Content: prompt}},
	}
	for turn := 0; turn < agentTurns; turn++ {
		msg, err := ollamaChat(ctx, base+"/ollama/api/chat", req)
		if err != nil {
			return "", fmt.Errorf("ollama turn %d: %w", turn+1, err)
		}
		if len(msg.ToolCalls) == 0 {
			return msg.Content, nil
		}
		echo := msg
		if !cl.echoIDs {
			echo.ToolCalls = slices.Clone(msg.ToolCalls)
			for i := range echo.ToolCalls {
				echo.ToolCalls[i].ID = ""
			}
		}
		req.Messages = append(req.Messages, echo)
		for _, tc := range msg.ToolCalls {
			res, err := ollamaToolMessage(ctx, tools, tc, cl.sendIDs)
			if err != nil {
				return "", fmt.Errorf("ollama turn %d: %w", turn+1, err)
			}
			req.Messages = append(req.Messages, res)
		}
	}
	return "", errors.New("ollama: no final answer")
}

// ollamaToolMessage runs one call and returns the tool message that answers
// it: the result as Tools gave it, the function's name, and, with sendID,
// the call's id when the call carried one (as geminiAgent sends it back with
// the answer). The tools get the call's id either way: fixture.Executor
// finds the fixture by it.
func ollamaToolMessage(ctx context.Context, tools agent.Tools, tc ollamaToolCall, sendID bool) (ollamaMessage, error) {
	res, err := tools.Execute(ctx, wire.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	if err != nil {
		return ollamaMessage{}, err
	}
	msg := ollamaMessage{Role: "tool", Content: string(res.Content), ToolName: tc.Function.Name}
	if sendID {
		msg.ToolCallID = tc.ID
	}
	return msg, nil
}

// ollamaChat posts one chat request and returns the assistant message: the
// single JSON object, or the NDJSON lines up to "done": true folded into one
// message (content concatenated, tool calls in order).
func ollamaChat(ctx context.Context, url string, req ollamaRequest) (ollamaMessage, error) {
	a, err := ollamaPost(ctx, url, req)
	return a.Message, err
}

// ollamaIDless plays l on Ollama's chat API as Ollama documents it and as
// older servers answer: fake.Ollama's bytes without the id the current
// server gives each call, so that scrub has to address the calls by their
// wire.SyntheticID. A response with tool calls that does not carry the id
// to strip is answered with a 500 naming the problem, so that a change in
// the fake cannot quietly turn this back into the id-carrying case.
func ollamaIDless(l fake.ToolLoop) fake.Script {
	s := fake.Ollama(l)
	id := []byte(`"id":"` + l.CallID + `",`)
	return fake.ScriptFunc(func(r *fake.Request) *fake.Response {
		resp := s.Respond(r)
		raw := resp.Bytes()
		if !bytes.Contains(raw, []byte(`"tool_calls"`)) {
			return resp
		}
		if bytes.Count(raw, id) != 1 {
			return &fake.Response{Status: http.StatusInternalServerError, Body: []byte(`{"error":"ollamaIDless: no call id ` + l.CallID + ` to strip"}`)}
		}
		resp.Body = bytes.ReplaceAll(resp.Body, id, nil)
		for i, e := range resp.Events {
			resp.Events[i] = bytes.ReplaceAll(e, id, nil)
		}
		return resp
	})
}

// TestScrubOllamaIDlessClients pins the limit of scrubbing an Ollama
// recording whose calls carry no id (docs/scrub.md, "Ollama clients"). All
// three clients send the same requests while the calls have no id, so the
// recording cannot tell them apart. Scrub gives the calls ids, adds them to
// the echoed calls and leaves the tool messages without tool_call_id: that
// is what ollamaNameOnlyAgent, the client as Ollama documents it, sends in
// replay. ollamaAgent now sends a tool_call_id, and ollamaBareAgent echoes
// the calls without the ids; both miss. No single recorded request can match
// all three.
func TestScrubOllamaIDlessClients(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "agent.cassette")
	up := fake.New(t, conversations(ollamaIDless, writeLoop, shellLoop))
	rec := startScrubProxy(t, proxy.ModeRecord, path, up.URL())
	for _, prompt := range []string{writePrompt, shellPrompt} {
		if _, err := ollamaAgent(ctx, rec.URL, agent.LocalTools{Dir: work}, prompt, false); err != nil {
			t.Fatalf("record %q: %v", prompt, err)
		}
	}
	rec.Close()
	up.Close()
	code, out, errs := runCLI(t, "scrub", "--cassette", path)
	if code != 0 || !strings.Contains(out, "2 tool call(s) substituted, 0 left unchanged") {
		t.Fatalf("scrub: exit %d: %s%s", code, out, errs)
	}
	exec, err := fixture.NewCassetteExecutor(path)
	if err != nil {
		t.Fatal(err)
	}

	// The name-only client replays both conversations.
	rep := startScrubProxy(t, proxy.ModeReplay, path, "")
	for _, c := range []struct{ prompt, want string }{{writePrompt, writeLoop.Answer}, {shellPrompt, shellLoop.Answer}} {
		got, err := ollamaNameOnlyAgent(ctx, rep.URL, exec, c.prompt, false)
		if err != nil || got != c.want {
			t.Errorf("name-only client, replay %q: %q, %v; want %q", c.prompt, got, err, c.want)
		}
	}
	if unused := rep.unused(t); len(unused) != 0 {
		t.Errorf("interactions not replayed: %v", unused)
	}
	rep.Close()

	// The others miss where they differ from it.
	for _, c := range []struct {
		name  string
		agent providerAgent
		want  string
	}{
		{"tool_call_id", ollamaAgent, `differs at messages.2.tool_call_id (messages[2] (tool)): got \"call_write_file\", recorded (absent)`},
		{"bare echo", ollamaBareAgent, `differs at messages.1.tool_calls.0.id (messages[1] (assistant)): got (absent), recorded \"call_write_file\"`},
	} {
		rep := startScrubProxy(t, proxy.ModeReplay, path, "")
		_, err := c.agent(ctx, rep.URL, exec, writePrompt, false)
		switch {
		case err == nil:
			t.Errorf("%s: the client replayed an id-less recording; docs/scrub.md says it cannot", c.name)
		case !strings.Contains(err.Error(), "400 Bad Request") || !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: miss %v\nlacks %s", c.name, err, c.want)
		}
		rep.Close()
	}
}
