package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/examples/agent"
	"github.com/llmproxy/llmproxy/fixture"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/wire"
)

// The two conversations every end-to-end test records: the model asks for
// write_file in one and for shell in the other, and the agent's real tools
// write notes.txt and run a command that creates ran.marker.
const (
	writePrompt = "Save a note to notes.txt."
	shellPrompt = "Run the marker command."
	notesText   = "remember the milk\n"
)

var (
	writeLoop = fake.ToolLoop{
		Tool:   "write_file",
		Args:   `{"path": "notes.txt", "content": "remember the milk\n"}`,
		CallID: "call_kJ3xTq9LmW2",
		Answer: "I saved the note to notes.txt.",
	}
	shellLoop = fake.ToolLoop{
		Tool:   "shell",
		Args:   `{"command": "echo ran > ran.marker && echo done"}`,
		CallID: "call_P0wZr2mYc8d",
		Answer: "The command ran and printed done.",
	}
)

// anthropicIDs gives a loop Anthropic-style tool_use ids.
func anthropicIDs(l fake.ToolLoop) fake.ToolLoop {
	l.CallID = "toolu_01" + strings.TrimPrefix(l.CallID, "call_")
	return l
}

// conversations routes each request to the loop whose prompt it carries.
func conversations(script func(fake.ToolLoop) fake.Script, write, shell fake.ToolLoop) fake.Script {
	ws, ss := script(write), script(shell)
	return fake.ScriptFunc(func(r *fake.Request) *fake.Response {
		if bytes.Contains(r.Body, []byte(writePrompt)) {
			return ws.Respond(r)
		}
		return ss.Respond(r)
	})
}

// scrubProxy is a proxy on an httptest server over a cassette file.
type scrubProxy struct {
	URL string
	srv *httptest.Server
	p   *proxy.Server
	c   *cassette.Cassette
}

// startScrubProxy serves the cassette at path in mode; every upstream name
// and the default go to upstream. In replay any upstream contact fails the
// test.
func startScrubProxy(t *testing.T, mode proxy.Mode, path, upstream string) *scrubProxy {
	t.Helper()
	return serveCassette(t, mode, path, func(cfg *proxy.Config) {
		if upstream != "" {
			u := mustParseURL(t, upstream)
			cfg.Default = u
			cfg.Upstreams = map[string]*url.URL{"openai": u, "anthropic": u, "gemini": u, "ollama": u}
		}
	})
}

// serveCassette serves the cassette at path in mode, with the upstreams
// configure sets; in replay any upstream contact fails the test.
func serveCassette(t *testing.T, mode proxy.Mode, path string, configure func(*proxy.Config)) *scrubProxy {
	t.Helper()
	c, err := cassette.Open(path, cassette.Options{ReadOnly: mode == proxy.ModeReplay, Version: version})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	cfg := proxy.Config{Mode: mode, Cassette: c}
	configure(&cfg)
	if mode == proxy.ModeReplay {
		cfg.Transport = noUpstream{t}
	}
	p, err := proxy.New(cfg)
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	rp := &scrubProxy{srv: httptest.NewServer(p), p: p, c: c}
	rp.URL = rp.srv.URL
	t.Cleanup(rp.Close)
	return rp
}

// mustParseURL parses raw or fails the test.
func mustParseURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Close stops the proxy and closes its cassette; it may be called twice.
func (rp *scrubProxy) Close() {
	if rp.srv != nil {
		rp.srv.Close()
		rp.p.Close()
		rp.c.Close()
		rp.srv = nil
	}
}

// unused stops serving, waiting for every handler to finish, and returns
// the interactions the proxy did not consume.
func (rp *scrubProxy) unused(t *testing.T) map[string][]cassette.Summary {
	t.Helper()
	rp.srv.Close()
	u, err := rp.p.AllUnused()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// noUpstream fails the test if replay ever reaches for an upstream.
type noUpstream struct{ t *testing.T }

func (f noUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	f.t.Errorf("replay contacted an upstream: %s %s", r.Method, r.URL)
	return nil, errors.New("no upstream in replay")
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// exportOf is `llmproxy export` of a cassette.
func exportBytes(t *testing.T, path string) []byte {
	t.Helper()
	code, out, errs := runCLI(t, "export", "--cassette", path)
	if code != 0 {
		t.Fatalf("export %s: exit %d: %s", path, code, errs)
	}
	return []byte(out)
}

// TestScrubEndToEnd records a tool-using agent on each provider, streamed
// and not, with tools that really write a file and run a command; scrubs
// the cassette; and replays it with the upstream gone and the tools swapped
// for fixture.Executor: the same answers, no file written, no command run.
func TestScrubEndToEnd(t *testing.T) {
	providers := []struct {
		name   string
		script func(fake.ToolLoop) fake.Script
		agent  providerAgent
		ids    func(fake.ToolLoop) fake.ToolLoop
	}{
		{"openai-chat", fake.OpenAIChat, chatAgent, nil},
		{"openai-responses", fake.OpenAIResponses, responsesAgent, nil},
		{"anthropic-messages", fake.AnthropicMessages, anthropicAgent, anthropicIDs},
		{"gemini", fake.Gemini, geminiAgent, nil},
		// The current Ollama server gives each call an id; a client may
		// send it back as tool_call_id, or answer by tool_name alone as
		// the Ollama docs do, echoing the calls with or without their ids.
		{"ollama", fake.Ollama, ollamaAgent, nil},
		{"ollama-nameonly", fake.Ollama, ollamaNameOnlyAgent, nil},
		{"ollama-bare", fake.Ollama, ollamaBareAgent, nil},
		// Older servers and the docs give no ids: the docs' client answers
		// by name. A client that sends tool_call_id once it sees an id, or
		// leaves ids out of its echo, cannot replay such a recording after
		// scrub: see TestScrubOllamaIDlessClients.
		{"ollama-idless-nameonly", ollamaIDless, ollamaNameOnlyAgent, nil},
	}
	for _, pv := range providers {
		for _, stream := range []bool{false, true} {
			name := pv.name + map[bool]string{false: "/json", true: "/stream"}[stream]
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				write, shell := writeLoop, shellLoop
				if pv.ids != nil {
					write, shell = pv.ids(write), pv.ids(shell)
				}
				dir := t.TempDir()
				work := filepath.Join(dir, "work")
				if err := os.Mkdir(work, 0o755); err != nil {
					t.Fatal(err)
				}
				notes, marker := filepath.Join(work, "notes.txt"), filepath.Join(work, "ran.marker")
				path := filepath.Join(dir, "agent.cassette")

				// Record: the real tools run, once each.
				up := fake.New(t, conversations(pv.script, write, shell))
				rec := startScrubProxy(t, proxy.ModeRecord, path, up.URL())
				local := agent.LocalTools{Dir: work}
				for _, c := range []struct{ prompt, want string }{{writePrompt, write.Answer}, {shellPrompt, shell.Answer}} {
					got, err := pv.agent(ctx, rec.URL, local, c.prompt, stream)
					if err != nil {
						t.Fatalf("record %q: %v", c.prompt, err)
					}
					if got != c.want {
						t.Fatalf("record %q: answer %q, want %q", c.prompt, got, c.want)
					}
				}
				rec.Close()
				if b, err := os.ReadFile(notes); err != nil || string(b) != notesText {
					t.Fatalf("record: notes.txt = %q, %v; want %q written by the real tool", b, err, notesText)
				}
				if b, err := os.ReadFile(marker); err != nil || string(b) != "ran\n" {
					t.Fatalf("record: ran.marker = %q, %v; want the command to have run", b, err)
				}
				hits := up.Hits()
				if hits != 4 {
					t.Fatalf("record: upstream hits = %d, want 4", hits)
				}
				up.Close()
				os.Remove(notes)
				os.Remove(marker)

				// Scrub.
				code, out, errs := runCLI(t, "scrub", "--cassette", path)
				if code != 0 {
					t.Fatalf("scrub: exit %d: %s%s", code, out, errs)
				}
				for _, want := range []string{"2 tool call(s) substituted, 0 left unchanged", "call_write_file", "call_shell"} {
					if !strings.Contains(out, want) {
						t.Errorf("scrub report lacks %q:\n%s", want, out)
					}
				}

				// Replay: fixtures stand in for the tools.
				rep := startScrubProxy(t, proxy.ModeReplay, path, "")
				var tools agent.Tools
				var err error
				if stream {
					tools, err = fixture.NewProxyExecutor(rep.URL)
				} else {
					tools, err = fixture.NewCassetteExecutor(path)
				}
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range []struct{ prompt, want string }{{writePrompt, write.Answer}, {shellPrompt, shell.Answer}} {
					got, err := pv.agent(ctx, rep.URL, tools, c.prompt, stream)
					if err != nil {
						t.Fatalf("replay %q: %v", c.prompt, err)
					}
					if got != c.want {
						t.Errorf("replay %q: answer %q, want %q", c.prompt, got, c.want)
					}
				}
				if fileExists(notes) {
					t.Errorf("replay wrote %s: the real write_file tool ran", notes)
				}
				if fileExists(marker) {
					t.Errorf("replay created %s: the real shell tool ran", marker)
				}
				if up.Hits() != hits {
					t.Errorf("upstream hits = %d after replay, want %d", up.Hits(), hits)
				}
				if unused := rep.unused(t); len(unused) != 0 {
					t.Errorf("interactions not replayed: %v", unused)
				}
			})
		}
	}
}

// recordAgent records the openai-chat agent's two conversations into a new
// cassette and returns its path and the work directory.
func recordAgent(t *testing.T, stream bool) (path, work string) {
	t.Helper()
	dir := t.TempDir()
	work = filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "agent.cassette")
	up := fake.New(t, conversations(fake.OpenAIChat, writeLoop, shellLoop))
	rec := startScrubProxy(t, proxy.ModeRecord, path, up.URL())
	for _, prompt := range []string{writePrompt, shellPrompt} {
		if _, err := chatAgent(context.Background(), rec.URL, agent.LocalTools{Dir: work}, prompt, stream); err != nil {
			t.Fatalf("record %q: %v", prompt, err)
		}
	}
	rec.Close()
	return path, work
}

// changedTools answers like fixtures, except that shell reports another
// output: what an application that ran its real tool would send.
type changedTools struct{ fixtures *fixture.Executor }

func (c changedTools) Execute(ctx context.Context, call wire.ToolCall) (wire.ToolResult, error) {
	res, err := c.fixtures.Execute(ctx, call)
	if call.Name == "shell" {
		res.Content = []byte(`{"exitCode":0,"stderr":"","stdout":"something else\n"}`)
	}
	return res, err
}

// TestScrubReplayChangedResultIsMiss replays a scrubbed cassette with a
// tool result that differs from its fixture: a miss that names the call.
func TestScrubReplayChangedResultIsMiss(t *testing.T) {
	path, _ := recordAgent(t, false)
	if code, out, errs := runCLI(t, "scrub", "--cassette", path); code != 0 {
		t.Fatalf("scrub: exit %d: %s%s", code, out, errs)
	}
	exec, err := fixture.NewCassetteExecutor(path)
	if err != nil {
		t.Fatal(err)
	}
	rep := startScrubProxy(t, proxy.ModeReplay, path, "")
	_, err = chatAgent(context.Background(), rep.URL, changedTools{exec}, shellPrompt, false)
	if err == nil {
		t.Fatal("replay with a changed shell result succeeded, want a miss")
	}
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Type != "cassette_miss" {
		t.Fatalf("replay error %v, want a 400 cassette_miss", err)
	}
	if !strings.HasPrefix(apiErr.Message, "llmproxy: cassette "+path+": tool result for call call_shell differs from its fixture") {
		t.Errorf("miss message does not start by naming the call:\n%s", apiErr.Message)
	}
	for _, want := range []string{"something else", "ran a real tool", "closest is interaction"} {
		if !strings.Contains(apiErr.Message, want) {
			t.Errorf("miss message lacks %q:\n%s", want, apiErr.Message)
		}
	}
	// The other conversation, with results equal to its fixtures, replays.
	if _, err := chatAgent(context.Background(), rep.URL, changedTools{exec}, writePrompt, false); err != nil {
		t.Errorf("replay of the unchanged conversation: %v", err)
	}
}

// TestScrubReplayResultComparedAsValue replays a scrubbed cassette with an
// application that writes its tool result as Python's json.dumps does
// (spaces after separators, its own key order, 21.0 for 21): the same JSON
// value as the fixture, so a hit. A genuinely different value is a miss
// that names the call and the value inside the result.
func TestScrubReplayResultComparedAsValue(t *testing.T) {
	good, _ := weatherLoops()
	path := recordWeather(t, good)
	if code, out, errs := runCLI(t, "scrub", "--cassette", path, "--map", "get_weather=weather"); code != 0 || !strings.Contains(out, "call_weather") {
		t.Fatalf("scrub: exit %d: %s%s", code, out, errs)
	}
	ctx := context.Background()
	rep := startScrubProxy(t, proxy.ModeReplay, path, "")
	dumps := staticTools{"get_weather": `{"location": "Paris", "temperature": 21.0, "unit": "celsius", "condition": "sunny"}`}
	answer, err := runChatLoop(ctx, rep.URL, dumps, "weather question A", "get_weather")
	if err != nil || answer != good.Answer {
		t.Fatalf("replay with a json.dumps-style result: %q, %v; want the recorded answer %q", answer, err, good.Answer)
	}
	rep.Close()
	rep = startScrubProxy(t, proxy.ModeReplay, path, "") // every interaction unused again
	other := staticTools{"get_weather": `{"location": "Paris", "temperature": 22.0, "unit": "celsius", "condition": "sunny"}`}
	_, err = runChatLoop(ctx, rep.URL, other, "weather question A", "get_weather")
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Type != "cassette_miss" {
		t.Fatalf("replay with another temperature: %v, want a 400 cassette_miss", err)
	}
	want := "tool result for call call_weather differs from its fixture at messages.2.content, in the result at temperature: got 22.0, fixture 21"
	if !strings.Contains(apiErr.Message, want) {
		t.Errorf("miss message lacks %q:\n%s", want, apiErr.Message)
	}
}

// TestScrubIdempotent scrubs twice: the second run changes no byte of the
// export, and says so.
func TestScrubIdempotent(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			path, _ := recordAgent(t, stream)
			before := exportBytes(t, path)
			if code, out, errs := runCLI(t, "scrub", "--cassette", path); code != 0 {
				t.Fatalf("scrub 1: exit %d: %s%s", code, out, errs)
			}
			first := exportBytes(t, path)
			if bytes.Equal(before, first) {
				t.Fatal("the first scrub changed nothing")
			}
			code, out, errs := runCLI(t, "scrub", "--cassette", path)
			if code != 0 {
				t.Fatalf("scrub 2: exit %d: %s%s", code, out, errs)
			}
			if !strings.Contains(out, "nothing to change") {
				t.Errorf("second scrub output %q, want it to say there is nothing to change", out)
			}
			if second := exportBytes(t, path); !bytes.Equal(first, second) {
				t.Errorf("the second scrub changed the export:\n--- first\n%s\n--- second\n%s", first, second)
			}
			// --out of a scrubbed cassette gives the same interactions and fixtures.
			outPath := filepath.Join(t.TempDir(), "again.cassette")
			if code, out, errs := runCLI(t, "scrub", "--cassette", path, "--out", outPath); code != 0 {
				t.Fatalf("scrub --out: exit %d: %s%s", code, out, errs)
			}
			if again := exportBytes(t, outPath); !bytes.Equal(first, again) {
				t.Errorf("scrub --out of a scrubbed cassette differs from it")
			}
		})
	}
}

// TestScrubOut writes the scrubbed cassette elsewhere and leaves the input
// as it was.
func TestScrubOut(t *testing.T) {
	path, _ := recordAgent(t, true)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	outPath := filepath.Join(t.TempDir(), "scrubbed.cassette")
	code, out, errs := runCLI(t, "scrub", "--cassette", path, "--out", outPath)
	if code != 0 {
		t.Fatalf("scrub --out: exit %d: %s%s", code, out, errs)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(raw, after) {
		t.Error("scrub --out changed --cassette")
	}
	exp := exportBytes(t, outPath)
	for _, want := range []string{`"call_write_file": {`, `"call_shell": {`} {
		if !bytes.Contains(exp, []byte(want)) {
			t.Errorf("export of --out lacks %s; scrub said:\n%s%s", want, out, errs)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(outPath))
	if len(entries) != 1 {
		t.Errorf("the --out directory holds %d files, want only the cassette", len(entries))
	}
}

// staticTools answers each tool by name with fixed output.
type staticTools map[string]string

func (st staticTools) Execute(_ context.Context, call wire.ToolCall) (wire.ToolResult, error) {
	out, ok := st[call.Name]
	if !ok {
		return wire.ToolResult{}, errors.New("no tool " + call.Name)
	}
	return wire.ToolResult{CallID: call.ID, Name: call.Name, Content: []byte(out)}, nil
}

// runChatLoop is an application offering one weather-like tool named name.
func runChatLoop(ctx context.Context, base string, tools agent.Tools, prompt, name string) (string, error) {
	client := openai.NewClient(openaioption.WithBaseURL(base+"/v1"), openaioption.WithAPIKey("sk-test-app"), openaioption.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{
		Model:    openai.ChatModelGPT4oMini,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name:       name,
			Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}}},
		})},
	}
	for turn := 0; turn < agentTurns; turn++ {
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return "", err
		}
		msg := resp.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			return msg.Content, nil
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			res, err := tools.Execute(ctx, wire.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: []byte(tc.Function.Arguments)})
			if err != nil {
				return "", err
			}
			params.Messages = append(params.Messages, openai.ToolMessage(string(res.Content), tc.ID))
		}
	}
	return "", errors.New("no final answer")
}

// weatherLoops are two get_weather rounds: one whose arguments satisfy the
// weather preset, one whose unit breaks its schema.
func weatherLoops() (good, bad fake.ToolLoop) {
	good = fake.ToolLoop{Tool: "get_weather", Args: `{"location":"Paris","unit":"celsius"}`, CallID: "call_abc123", Answer: "Sunny, 21 °C."}
	bad = fake.ToolLoop{Tool: "get_weather", Args: `{"location":"Paris","unit":"kelvin"}`, CallID: "call_def456", Answer: "Sunny, 294 K."}
	return good, bad
}

// recordWeather records an application whose weather tool is get_weather,
// one conversation per loop, into a new cassette.
func recordWeather(t *testing.T, loops ...fake.ToolLoop) string {
	t.Helper()
	const weatherOut = `{"location":"Paris","temperature":21,"unit":"celsius","condition":"sunny"}`
	path := filepath.Join(t.TempDir(), "weather.cassette")
	for n, l := range loops {
		up := fake.New(t, fake.OpenAIChat(l))
		rec := startScrubProxy(t, proxy.ModeRecord, path, up.URL())
		tools := staticTools{"get_weather": weatherOut}
		if _, err := runChatLoop(context.Background(), rec.URL, tools, "weather question "+string(rune('A'+n)), "get_weather"); err != nil {
			t.Fatal(err)
		}
		rec.Close()
	}
	return path
}

// TestScrubMapFromEnvironment: LLMPROXY_MAP holds comma-separated mappings.
func TestScrubMapFromEnvironment(t *testing.T) {
	good, _ := weatherLoops()
	path := recordWeather(t, good)
	t.Setenv("LLMPROXY_MAP", "get_weather=weather, run=shell")
	code, out, errs := runCLI(t, "scrub", "--cassette", path)
	if code != 0 || !strings.Contains(out, "weather  1  call_weather") {
		t.Errorf("scrub with LLMPROXY_MAP: exit %d: %s%s", code, out, errs)
	}
}

// TestScrubMap substitutes an application's get_weather tool with --map,
// reports a call whose arguments break the schema and leaves it unchanged,
// and fails under --strict without writing.
func TestScrubMap(t *testing.T) {
	good, bad := weatherLoops()

	t.Run("mapped", func(t *testing.T) {
		path := recordWeather(t, good)
		code, out, errs := runCLI(t, "scrub", "--cassette", path)
		if code != 0 || !strings.Contains(out, "0 tool call(s) substituted, 0 left unchanged") {
			t.Fatalf("scrub without --map: exit %d, %s%s; want nothing substituted", code, out, errs)
		}
		// With nothing substituted, the report names the tools it saw and
		// how to map one.
		if !strings.Contains(out, "tools called that are no preset: get_weather") || !strings.Contains(out, "--map get_weather=PRESET") {
			t.Errorf("scrub without --map gives no hint:\n%s", out)
		}
		code, out, errs = runCLI(t, "scrub", "--cassette", path, "--map", "get_weather=weather")
		if code != 0 {
			t.Fatalf("scrub --map: exit %d: %s%s", code, out, errs)
		}
		if !strings.Contains(out, "1 tool call(s) substituted") || !strings.Contains(out, "call_weather") {
			t.Errorf("scrub --map report:\n%s", out)
		}
		exec, err := fixture.NewCassetteExecutor(path)
		if err != nil {
			t.Fatal(err)
		}
		res, err := exec.Execute(context.Background(), wire.ToolCall{ID: "call_weather", Name: "get_weather"})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"condition":"sunny","location":"Paris","temperature":21,"unit":"celsius"}`; string(res.Content) != want {
			t.Errorf("fixture = %s, want %s", res.Content, want)
		}
		exp := exportBytes(t, path)
		if !bytes.Contains(exp, []byte(`"function": "get_weather"`)) || !bytes.Contains(exp, []byte(`"preset": "weather"`)) {
			t.Errorf("stored fixture does not name the preset and the function:\n%s", exp)
		}
		// Replay: the application with the fixture executor, no upstream.
		rep := startScrubProxy(t, proxy.ModeReplay, path, "")
		if _, err := runChatLoop(context.Background(), rep.URL, exec, "weather question A", "get_weather"); err != nil {
			t.Errorf("replay after --map: %v", err)
		}
	})

	t.Run("schema violation", func(t *testing.T) {
		path := recordWeather(t, good, bad)
		before := exportBytes(t, path)
		raw, _ := os.ReadFile(path)

		code, out, errs := runCLI(t, "scrub", "--cassette", path, "--map", "get_weather=weather", "--strict")
		if code != 1 {
			t.Fatalf("scrub --strict: exit %d, want 1: %s%s", code, out, errs)
		}
		if !strings.Contains(errs, "--strict") || !strings.Contains(errs, path) {
			t.Errorf("stderr %q should name --strict and the cassette", errs)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(raw, after) {
			t.Error("scrub --strict wrote the cassette")
		}

		code, out, errs = runCLI(t, "scrub", "--cassette", path, "--map", "get_weather=weather")
		if code != 0 {
			t.Fatalf("scrub: exit %d: %s%s", code, out, errs)
		}
		for _, want := range []string{"1 tool call(s) substituted, 1 left unchanged", "interaction 3, call call_def456 (get_weather → weather): arguments /unit: must be one of"} {
			if !strings.Contains(out, want) {
				t.Errorf("report lacks %q:\n%s", want, out)
			}
		}
		after := exportBytes(t, path)
		if !bytes.Contains(after, []byte("call_def456")) || !bytes.Contains(after, []byte("kelvin")) {
			t.Error("the call that breaks the schema was changed")
		}
		if bytes.Equal(before, after) {
			t.Error("the valid call was not substituted")
		}
	})
}

// TestScrubBadMap: a mapping without '=' or to an unknown preset is a usage
// error (exit 2) that lists the presets.
func TestScrubBadMap(t *testing.T) {
	path, _ := recordAgent(t, false)
	raw, _ := os.ReadFile(path)
	for _, spec := range []string{"get_weather", "get_weather=wether", "=weather"} {
		t.Run(spec, func(t *testing.T) {
			code, _, errs := runCLI(t, "scrub", "--cassette", path, "--map", spec)
			if code != 2 {
				t.Fatalf("exit %d, want 2: %s", code, errs)
			}
			if !strings.Contains(errs, "--map") || !strings.Contains(errs, "calculator, current_time, weather") {
				t.Errorf("stderr %q should name --map and the presets", errs)
			}
		})
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(raw, after) {
		t.Error("a bad --map changed the cassette")
	}
}

// TestScrubMissingCassette is an error naming the file, creating nothing.
func TestScrubMissingCassette(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.cassette")
	code, _, errs := runCLI(t, "scrub", "--cassette", path)
	if code != 1 || !strings.Contains(errs, path) {
		t.Errorf("exit %d, stderr %q; want 1 naming %s", code, errs, path)
	}
	if fileExists(path) {
		t.Error("scrub created the missing cassette")
	}
	if code, _, _ := runCLI(t, "scrub"); code != 2 {
		t.Errorf("scrub without --cassette: exit %d, want 2", code)
	}
}
