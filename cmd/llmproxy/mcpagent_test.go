package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/fixture"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/internal/mcptest"
	"github.com/llmproxy/llmproxy/proxy"
)

// The agent round: the model (OpenAI chat) asks for save_file, a tool of
// the MCP server files (internal/mcptest, which really writes the file),
// and answers once it has the result.
var saveLoop = fake.ToolLoop{
	Tool:   "save_file",
	Args:   `{"path": "notes.txt", "content": "remember the milk\n"}`,
	CallID: "call_Q7rT2xLmW9p",
	Answer: "I saved the note to notes.txt.",
}

// startAgentProxy serves the cassette at path in mode, with the fake
// provider at upstream and the MCP server files at mcpURL ("" for none).
// In replay any upstream contact fails the test.
func startAgentProxy(t *testing.T, mode proxy.Mode, path, upstream, mcpURL string) *scrubProxy {
	t.Helper()
	return serveCassette(t, mode, path, func(cfg *proxy.Config) {
		if upstream != "" {
			u := mustParseURL(t, upstream)
			cfg.Default, cfg.Upstreams = u, map[string]*url.URL{"openai": u}
		}
		if mcpURL != "" {
			cfg.MCP = map[string]*url.URL{"files": mustParseURL(t, mcpURL)}
		}
	})
}

// mcpAgent is an agent whose tools are those of the MCP server files: it
// lists them (Go SDK client, through the proxy's /mcp/files), offers them
// to the model (openai-go, through the proxy), calls each tool the model
// asks for on the server and sends the result's text back, until the
// model answers. It returns its transcript: what it sent and got, one line
// each. Call ids are left out: scrub renames them (call_write_file).
func mcpAgent(ctx context.Context, base, prompt string) (string, error) {
	var tr strings.Builder
	cs, err := mcptest.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base + "/mcp/files", MaxRetries: -1})
	if err != nil {
		return "", fmt.Errorf("mcp connect: %w", err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("tools/list: %w", err)
	}
	var tools []openai.ChatCompletionToolUnionParam
	for _, tl := range list.Tools {
		var params openai.FunctionParameters
		raw, _ := json.Marshal(tl.InputSchema)
		if err := json.Unmarshal(raw, &params); err != nil {
			return "", fmt.Errorf("tool %s: input schema: %w", tl.Name, err)
		}
		tools = append(tools, openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: tl.Name, Description: openai.String(tl.Description), Parameters: params}))
		fmt.Fprintf(&tr, "tool: %s %s\n", tl.Name, raw)
	}
	client := openai.NewClient(openaioption.WithBaseURL(base+"/v1"), openaioption.WithAPIKey("sk-test-agent"), openaioption.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{
		Model:    openai.ChatModelGPT4oMini,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		Tools:    tools,
	}
	fmt.Fprintf(&tr, "user: %s\n", prompt)
	for turn := 0; turn < agentTurns; turn++ {
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return tr.String(), fmt.Errorf("model turn %d: %w", turn+1, err)
		}
		msg := resp.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			fmt.Fprintf(&tr, "model: %s\n", msg.Content)
			return tr.String(), nil
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			fmt.Fprintf(&tr, "model calls: %s %s\n", tc.Function.Name, tc.Function.Arguments)
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tc.Function.Name, Arguments: json.RawMessage(tc.Function.Arguments)})
			if err != nil {
				return tr.String(), fmt.Errorf("tools/call %s: %w", tc.Function.Name, err)
			}
			text := mcptest.ResultText(res)
			fmt.Fprintf(&tr, "mcp result: %s\n", text)
			params.Messages = append(params.Messages, openai.ToolMessage(firstText(res), tc.ID))
		}
	}
	return tr.String(), errors.New("no final answer")
}

// firstText is a tool result's first text content, what the agent sends
// the model.
func firstText(res *sdk.CallToolResult) string {
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			return t.Text
		}
	}
	return ""
}

// recordMCPAgent records one agent round of loop into a new cassette
// through a proxy in front of the fake provider and the MCP server files
// (SSE or JSON answers), and returns the cassette's path, the transcript
// and the server's directory.
func recordMCPAgent(t *testing.T, loop fake.ToolLoop, jsonAnswers bool) (path, transcript, dir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir = t.TempDir()
	srv := httptest.NewServer(mcptest.Handler(dir, jsonAnswers))
	defer srv.Close()
	up := fake.New(t, fake.OpenAIChat(loop))
	defer up.Close()
	path = filepath.Join(t.TempDir(), "agent.cassette")
	rec := startAgentProxy(t, proxy.ModeRecord, path, up.URL(), srv.URL+"/")
	transcript, err := mcpAgent(ctx, rec.URL, writePrompt)
	rec.Close()
	if err != nil {
		t.Fatalf("record: %v\ntranscript:\n%s", err, transcript)
	}
	if up.Hits() != 2 {
		t.Fatalf("record: the provider answered %d requests, want 2", up.Hits())
	}
	return path, transcript, dir
}

// TestScrubMCP: the scrubbed cassette holds one fixture for the model's
// call and the MCP call, its output in the MCP answer; an MCP client
// calling the tool in replay gets the fixture's result.
func TestScrubMCP(t *testing.T) {
	path, _, _ := recordMCPAgent(t, saveLoop, false)
	if code, out, errs := runCLI(t, "scrub", "--cassette", path, "--map", "files.save_file=write_file"); code != 0 {
		t.Fatalf("scrub: exit %d: %s%s", code, out, errs)
	}
	// Idempotent: a second scrub finds the same round and changes nothing.
	if code, out, errs := runCLI(t, "scrub", "--cassette", path, "--map", "files.save_file=write_file"); code != 0 || !strings.Contains(out, "nothing to change") || !strings.Contains(out, "1 tool call(s) substituted") {
		t.Errorf("second scrub: exit %d: %s%s; want the same call and nothing to change", code, out, errs)
	}
	ct := load(t, path)
	f, err := fixture.Parse("call_write_file", ct.Fixtures["call_write_file"])
	if err != nil {
		t.Fatalf("fixture: %v (fixtures %v)", err, ct.Fixtures)
	}
	if f.Preset != "write_file" || f.Function != "save_file" || string(f.Result.Content) != `{"bytesWritten":18}` ||
		string(f.Call.Arguments) != `{"content":"remember the milk\n","path":"notes.txt"}` {
		t.Errorf("fixture %+v: want write_file called as save_file, its arguments and result", f)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep := startAgentProxy(t, proxy.ModeReplay, path, "", "")
	cs, err := mcptest.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: rep.URL + "/mcp/files", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "save_file", Arguments: map[string]any{"content": "remember the milk\n", "path": "notes.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	if firstText(res) != string(f.Result.Content) || string(sc) != string(f.Result.Content) || res.IsError {
		t.Errorf("replayed tools/call: text %s, structured %s, isError %v; want the fixture's %s", firstText(res), sc, res.IsError, f.Result.Content)
	}
}

// load reads a cassette's contents.
func load(t *testing.T, path string) *cassette.Contents {
	t.Helper()
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ct, err := c.Load()
	if err != nil {
		t.Fatal(err)
	}
	return ct
}

// TestScrubMCPBadInput: a --map naming an unknown preset is a usage error
// that changes nothing; an MCP result that is an error (isError, not the
// error envelope) leaves the call and the model's call unchanged, says
// why, and the cassette still replays.
func TestScrubMCPBadInput(t *testing.T) {
	t.Run("unknown preset", func(t *testing.T) {
		path, _, _ := recordMCPAgent(t, saveLoop, true)
		raw, _ := os.ReadFile(path)
		for _, spec := range []string{"files.save_file=write_fle", ".save_file=write_file"} {
			code, _, errs := runCLI(t, "scrub", "--cassette", path, "--map", spec)
			if code != 2 || !strings.Contains(errs, "--map") {
				t.Errorf("--map %s: exit %d, %s; want a usage error naming --map", spec, code, errs)
			}
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(raw, after) {
			t.Error("a bad --map changed the cassette")
		}
	})
	t.Run("isError result", func(t *testing.T) {
		bad := saveLoop
		bad.Args = `{"path": "../escape.txt", "content": "x"}`
		path, recorded, _ := recordMCPAgent(t, bad, false)
		if !strings.Contains(recorded, "error: true") {
			t.Fatalf("recorded transcript shows no tool error:\n%s", recorded)
		}
		before := exportBytes(t, path)
		code, out, errs := runCLI(t, "scrub", "--cassette", path, "--map", "files.save_file=write_file")
		if code != 0 {
			t.Fatalf("scrub: exit %d: %s%s", code, out, errs)
		}
		for _, want := range []string{"0 tool call(s) substituted, 2 left unchanged", "(files.save_file → write_file): error result.content.0.text: interaction", "the tool failed (isError)"} {
			if !strings.Contains(out, want) {
				t.Errorf("scrub report lacks %q:\n%s", want, out)
			}
		}
		if after := exportBytes(t, path); !bytes.Equal(before, after) {
			t.Error("scrub changed a cassette whose calls are all left unchanged")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		rep := startAgentProxy(t, proxy.ModeReplay, path, "", "")
		if replayed, err := mcpAgent(ctx, rep.URL, writePrompt); err != nil || replayed != recorded {
			t.Errorf("replay: %v\n--- recorded\n%s--- replayed\n%s", err, recorded, replayed)
		}
	})
}

// saveOver calls save_file(notes.txt) over t and returns the result's
// text.
func saveOver(ctx context.Context, t sdk.Transport) (string, error) {
	cs, err := mcptest.Connect(ctx, t)
	if err != nil {
		return "", err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "save_file", Arguments: mcptest.FileArgs{Path: "notes.txt", Content: notesText}})
	if err != nil {
		return "", err
	}
	return firstText(res), nil
}

// TestScrubMCPStdio: an MCP call recorded over stdio with no model call
// beside it becomes a fixture of its own, named SERVER.TOOL, its answer
// kept; the stdio replay answers with it.
func TestScrubMCPStdio(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	path := filepath.Join(t.TempDir(), "stdio.cassette")
	rec := startMCP(t, ctx, "mcp-stdio="+dir, "record", "--cassette", path, "--name", "notes", "--", self(t))
	recorded, err := saveOver(ctx, rec.client)
	if err != nil {
		t.Fatalf("record: %v (stderr: %s)", err, rec.stderr)
	}
	if err := rec.wait(t); err != nil {
		t.Fatalf("record: %v (stderr: %s)", err, rec.stderr)
	}
	if !fileExists(filepath.Join(dir, "notes.txt")) {
		t.Fatal("record: the server wrote no file")
	}
	os.Remove(filepath.Join(dir, "notes.txt"))
	before := load(t, path)

	code, out, errs := runCLI(t, "scrub", "--cassette", path, "--map", "notes.save_file=write_file")
	if code != 0 || !strings.Contains(out, "write_file  1  call_write_file\n") {
		t.Fatalf("scrub: exit %d: %s%s", code, out, errs)
	}
	after := load(t, path)
	f, err := fixture.Parse("call_write_file", after.Fixtures["call_write_file"])
	if err != nil || f.Function != "notes.save_file" || string(f.Result.Content) != `{"bytesWritten":18}` {
		t.Fatalf("fixture %+v, %v", f, err)
	}
	for n, i := range after.Interactions {
		if !bytes.Equal(i.Response.Bytes(), before.Interactions[n].Response.Bytes()) {
			t.Errorf("interaction %d's answer changed; a lone MCP call's answer is kept", i.ID)
		}
	}

	rep := startMCP(t, ctx, "", "replay", "--cassette", path, "--name", "notes")
	replayed, err := saveOver(ctx, rep.client)
	if err != nil {
		t.Fatalf("replay: %v (stderr: %s)", err, rep.stderr)
	}
	if err := rep.wait(t); err != nil {
		t.Fatalf("replay: %v (stderr: %s)", err, rep.stderr)
	}
	if replayed != recorded || replayed != string(f.Result.Content) {
		t.Errorf("replay answered %s, recorded %s, fixture %s", replayed, recorded, f.Result.Content)
	}
	if fileExists(filepath.Join(dir, "notes.txt")) {
		t.Error("replay wrote the file")
	}
}
