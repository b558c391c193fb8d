package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/proxy/proxytest"
	"github.com/llmproxy/llmproxy/scenario"
	"github.com/llmproxy/llmproxy/wire"
)

const fcResult = `{"location":"Paris","temperature":21,"unit":"celsius","condition":"sunny"}`

// weatherAgent runs the weather tool loop with openai-go against base and
// returns what the application saw.
func weatherAgent(ctx context.Context, base string, stream bool) (string, error) {
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What's the weather in Paris?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: "weather", Parameters: openai.FunctionParameters{"type": "object"}})},
	}
	var seen []string
	for range 2 {
		var cc openai.ChatCompletion
		if stream {
			params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			s := client.Chat.Completions.NewStreaming(ctx, params)
			var acc openai.ChatCompletionAccumulator
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			if err := s.Err(); err != nil {
				return strings.Join(seen, "\n"), err
			}
			cc = acc.ChatCompletion
		} else {
			got, err := client.Chat.Completions.New(ctx, params)
			if err != nil {
				return strings.Join(seen, "\n"), err
			}
			cc = *got
		}
		if len(cc.Choices) == 0 {
			return strings.Join(seen, "\n"), fmt.Errorf("an answer without a choice")
		}
		msg := cc.Choices[0].Message
		seen = append(seen, seenTurn(cc.Choices[0].FinishReason, cc.Usage.PromptTokens, cc.Usage.CompletionTokens, cc.Usage.CompletionTokensDetails.ReasoningTokens))
		for _, tc := range msg.ToolCalls {
			seen = append(seen, fmt.Sprintf("call %s %s %s", tc.ID, tc.Function.Name, sortedJSON(tc.Function.Arguments)))
		}
		if len(msg.ToolCalls) == 0 {
			return strings.Join(append(seen, "answer "+msg.Content), "\n"), nil
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			params.Messages = append(params.Messages, openai.ToolMessage(fcResult, tc.ID))
		}
	}
	return strings.Join(seen, "\n"), fmt.Errorf("no answer after two turns")
}

// sortedJSON prints JSON with its object keys sorted; nil when it is not JSON.
func sortedJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		v = nil
	}
	return fmt.Sprint(v)
}

// Record, scrub, convert, mock: the application sees the same conversation
// from the scenario as from the cassette.
func TestFromCassetteReproducesTheConversation(t *testing.T) {
	// weather is scrubbed into fixtures; get_weather is mapped to the
	// weather preset, and stays a function call of its own in the scenario;
	// "weather unscrubbed" keeps the recorded calls (Gemini's without ids).
	openaiChat := wireAgent{"openai", "openai-chat", fake.OpenAIChat, func(ctx context.Context, p urlOf, stream bool) (string, error) {
		return weatherAgent(ctx, p.URL("openai"), stream)
	}}
	anthropicMessages := wireAgent{"anthropic", "", fake.AnthropicMessages, func(ctx context.Context, p urlOf, stream bool) (string, error) {
		return anthropicWeatherAgent(ctx, p.URL("anthropic"), stream)
	}}
	openaiResponses := wireAgent{"openai", "openai-responses", fake.OpenAIResponses, func(ctx context.Context, p urlOf, stream bool) (string, error) {
		return responsesWeatherAgent(ctx, p.URL("openai"), stream, false)
	}}
	openaiResponsesChained := wireAgent{"openai", "openai-responses-chained", fake.OpenAIResponses, func(ctx context.Context, p urlOf, stream bool) (string, error) {
		return responsesWeatherAgent(ctx, p.URL("openai"), stream, true)
	}}
	gemini := wireAgent{"gemini", "", fake.Gemini, func(ctx context.Context, p urlOf, stream bool) (string, error) {
		return geminiWeatherAgent(ctx, p.URL("gemini"), stream)
	}}
	ollama := wireAgent{"ollama", "", fake.Ollama, func(ctx context.Context, p urlOf, stream bool) (string, error) {
		return ollamaWeatherAgent(ctx, p.URL("ollama"), stream)
	}}
	for _, tool := range []string{"weather", "get_weather", "weather unscrubbed"} {
		for _, w := range []wireAgent{openaiChat, anthropicMessages, openaiResponses, openaiResponsesChained, gemini, ollama} {
			t.Run(cmp(w.label, w.name)+" "+tool, func(t *testing.T) { fromCassetteRound(t, w, tool) })
		}
	}
}

// geminiDefaultIDs are the default ids mock gives the calls of the weather
// round, in a transcript.
var geminiDefaultIDs = regexp.MustCompile(`call "call_weather(_[0-9]+)?"`)

// urlOf is what gives a provider's base URL through a proxy or a mock.
type urlOf interface{ URL(string) string }

// wireAgent is one wire's fake upstream and application.
type wireAgent struct {
	name   string // the provider's route
	label  string // the test's name, when name is not enough
	script func(fake.ToolLoop) fake.Script
	run    func(ctx context.Context, p urlOf, stream bool) (string, error)
}

// anthropicWeatherAgent runs the weather tool loop with anthropic-sdk-go.
func anthropicWeatherAgent(ctx context.Context, base string, stream bool) (string, error) {
	client := anthropic.NewClient(anthropicoption.WithBaseURL(base+"/"), anthropicoption.WithAPIKey("sk-test"), anthropicoption.WithMaxRetries(0))
	params := anthropic.MessageNewParams{
		Model: "claude-sonnet-4-6", MaxTokens: 1024,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What's the weather in Paris?"))},
		Tools:    []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "weather", InputSchema: anthropic.ToolInputSchemaParam{}}}},
	}
	var seen []string
	for range 2 {
		var m anthropic.Message
		if stream {
			s := client.Messages.NewStreaming(ctx, params)
			for s.Next() {
				if err := m.Accumulate(s.Current()); err != nil {
					return strings.Join(seen, "\n"), err
				}
			}
			if err := s.Err(); err != nil {
				return strings.Join(seen, "\n"), err
			}
		} else {
			resp, err := client.Messages.New(ctx, params)
			if err != nil {
				return strings.Join(seen, "\n"), err
			}
			m = *resp
		}
		seen = append(seen, seenTurn(string(m.StopReason), m.Usage.InputTokens, m.Usage.OutputTokens, 0))
		var results []anthropic.ContentBlockParamUnion
		var text strings.Builder
		for _, b := range m.Content {
			switch b.Type {
			case "tool_use":
				tu := b.AsToolUse()
				seen = append(seen, fmt.Sprintf("call %s %s %s", tu.ID, tu.Name, sortedJSON(string(tu.Input))))
				results = append(results, anthropic.NewToolResultBlock(tu.ID, fcResult, false))
			case "text":
				text.WriteString(b.Text)
			}
		}
		if len(results) == 0 {
			return strings.Join(append(seen, "answer "+text.String()), "\n"), nil
		}
		params.Messages = append(params.Messages, m.ToParam(), anthropic.NewUserMessage(results...))
	}
	return strings.Join(seen, "\n"), fmt.Errorf("no answer after two turns")
}

// fromCassetteRound records the weather round with tool (" unscrubbed"
// after the name: the cassette is converted as recorded), streamed and not;
// scrubs; converts; and checks that mock shows the application what replay
// of the same cassette shows.
func fromCassetteRound(t *testing.T, w wireAgent, tool string) {
	tool, unscrubbed := strings.CutSuffix(tool, " unscrubbed")
	up := fake.New(t, w.script(fake.ToolLoop{Tool: tool, Args: `{"location":"Paris","unit":"celsius"}`, CallID: "call_w1", Answer: "Sunny, 21 °C."}))
	dir := t.TempDir()
	cas := filepath.Join(dir, "agent.cassette")
	rec, err := proxytest.Start(cas, proxytest.Mode(proxy.ModeRecord), proxytest.Upstream(w.name, up.URL()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var recorded [2]string
	for n, stream := range []bool{false, true} {
		if recorded[n], err = w.run(ctx, rec, stream); err != nil {
			t.Fatalf("record: %v", err)
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	commands := [][]string{
		{"scrub", "--cassette", cas, "--map", tool + "=weather"},
		{"scenario", "from-cassette", "--cassette", cas, "--out", filepath.Join(dir, "agent.yaml")},
		{"scenario", "check", filepath.Join(dir, "agent.yaml")},
	}
	if unscrubbed {
		commands = commands[1:]
	}
	for _, args := range commands {
		if code, stdout, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, stdout, stderr)
		}
	}
	checkConverted(t, filepath.Join(dir, "agent.yaml"), tool, unscrubbed)
	// What replay of the cassette shows (scrub renamed the calls).
	rep := proxytest.New(t, cas)
	for n, stream := range []bool{false, true} {
		if recorded[n], err = w.run(ctx, rep, stream); err != nil {
			t.Fatalf("replay: %v", err)
		}
	}
	// The two recorded conversations begin alike: only a named conversation
	// meets the second one's steps (ids) after the first's.
	m := proxytest.NewScenario(t, filepath.Join(dir, "agent.yaml"))
	named := conversationNamed(t, m, "recorded")
	for n, stream := range []bool{false, true} {
		got, err := w.run(ctx, named, stream)
		if err != nil {
			t.Fatalf("mock: %v (so far %s)", err, got)
		}
		if unscrubbed && w.name == "gemini" {
			// Gemini's calls come without ids; a scenario's calls always
			// have one, by default call_<function> (docs/scenarios.md).
			named := got
			if got = geminiDefaultIDs.ReplaceAllString(got, `call ""`); got == named {
				t.Errorf("conversation %d (stream %v): mock gave no default call id:\n%s", n, stream, got)
			}
		}
		if got != recorded[n] {
			t.Errorf("conversation %d (stream %v):\nmock   %s\nreplay %s", n, stream, got, recorded[n])
		}
	}
}

// conversationNamed serves m's routes through a proxy that names every
// request's conversation.
func conversationNamed(t *testing.T, m *proxytest.Mock, name string) urlOf {
	t.Helper()
	target, err := url.Parse(m.BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set(proxy.ConversationHeader, name)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	return frontURL(front.URL)
}

type frontURL string

func (f frontURL) URL(provider string) string { return string(f) + "/" + provider }

// checkConverted checks the converted weather round's second conversation:
// its answer waits for the result of the call before it, by fixture where
// the cassette was scrubbed, else by the function's name; and each answer
// carries the recorded usage.
func checkConverted(t *testing.T, path, tool string, unscrubbed bool) {
	t.Helper()
	s, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Steps) != 4 {
		t.Fatalf("%d steps, want 4 (two conversations of two answers)", len(s.Steps))
	}
	want := scenario.ToolResultCondition{Name: tool}
	if tool == "weather" && !unscrubbed {
		want = scenario.ToolResultCondition{Fixture: "call_weather_2"}
	}
	got := s.Steps[3].When.ToolResults
	if len(got) != 1 || got[0].Fixture != want.Fixture || got[0].Name != want.Name {
		t.Errorf("the last answer waits for %+v, want %+v", got, want)
	}
	for _, st := range s.Steps {
		if u := st.Respond.Usage; u == nil || u.Input == 0 || u.Output == 0 {
			t.Errorf("step %s: usage %v, want the recorded one", st.ID, u)
		}
	}
}

// odd is one recorded exchange of a hand-made cassette.
type odd struct {
	kind, path, request string
	status              int
	response            string
}

// oddCassette writes a cassette holding the exchanges, as recorded.
func oddCassette(t *testing.T, path string, exchanges ...odd) {
	t.Helper()
	c, err := cassette.Open(path, cassette.Options{Version: version})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := cassette.DefaultIndexer()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetIndexRules(m.Fingerprint()); err != nil {
		t.Fatal(err)
	}
	for n, x := range exchanges {
		i := &cassette.Interaction{Upstream: "default", Provider: "openai", Kind: x.kind,
			RecordedAt: time.Date(2026, 1, 2, 3, 4, n, 0, time.UTC),
			Request: cassette.Request{Method: "POST", Path: x.path,
				Headers: http.Header{"Content-Type": {"application/json"}}, Body: cassette.Body(x.request)},
			Response: cassette.Response{Status: x.status, Headers: http.Header{"Content-Type": {"application/json"}},
				Body: cassette.Body(x.response)},
		}
		key, shape, err := m.Keys(i)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := c.AppendAll([]cassette.Keyed{{Interaction: i, Key: key, Shape: shape}}); err != nil || res[0].Err != nil {
			t.Fatal(err, res)
		}
	}
}

// TestFromCassetteOddRecordings: recorded answers the scenario format cannot
// say exactly still convert into a scenario that checks (a finish reason it
// does not name, a usage no provider sends, a Responses output chained to
// an answer the cassette does not hold), and a body that is not JSON is an
// error naming the interaction, with nothing written.
func TestFromCassetteOddRecordings(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "odd.cassette")
	oddCassette(t, good,
		odd{"openai-chat", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"filtered?"}]}`, 200,
			`{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"…"},"finish_reason":"content_filter"}],` +
				`"usage":{"prompt_tokens":5,"completion_tokens":1,"completion_tokens_details":{"reasoning_tokens":9}}}`},
		odd{"openai-chat", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"negative?"}]}`, 200,
			`{"id":"c2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"no"},"finish_reason":"length"}],` +
				`"usage":{"prompt_tokens":-5,"completion_tokens":2}}`},
		odd{"openai-responses", "/v1/responses", `{"model":"m","previous_response_id":"resp_gone","input":[{"type":"function_call_output","call_id":"call_gone","output":"42"}]}`, 200,
			`{"id":"resp_2","object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"It is 42."}]}],` +
				`"usage":{"input_tokens":3,"output_tokens":4}}`},
		odd{"openai-chat", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"busy?"}]}`, 429,
			`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`},
	)
	out := filepath.Join(dir, "odd.yaml")
	if code, stdout, stderr := runCLI(t, "scenario", "from-cassette", "--cassette", good, "--out", out); code != 0 {
		t.Fatalf("from-cassette: exit %d\n%s%s", code, stdout, stderr)
	}
	s, err := scenario.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Steps) != 4 {
		t.Fatalf("%d steps, want 4", len(s.Steps))
	}
	filtered, negative, chained, busy := s.Steps[0].Respond, s.Steps[1].Respond, s.Steps[2], s.Steps[3].Respond
	if filtered.Finish != "" || filtered.Usage == nil || *filtered.Usage != (wire.Usage{Input: 5, Output: 1}) {
		t.Errorf("content_filter answer: finish %q usage %v; want the default finish and 5/1 without reasoning", filtered.Finish, filtered.Usage)
	}
	if negative.Finish != wire.FinishLength || negative.Usage != nil {
		t.Errorf("negative usage: finish %q usage %v; want length and mock's default usage", negative.Finish, negative.Usage)
	}
	if chained.Respond.Text != "It is 42." || len(chained.When.ToolResults) != 0 {
		t.Errorf("chained to a lost answer: %+v", chained)
	}
	if busy.Error == nil || busy.Error.Status != 429 || busy.Error.Message != "Rate limit reached" {
		t.Errorf("429: %+v", busy.Error)
	}

	bad := filepath.Join(dir, "bad.cassette")
	oddCassette(t, bad, odd{"openai-chat", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, 200, `{"choices":[`})
	badOut := filepath.Join(dir, "bad.yaml")
	code, _, stderr := runCLI(t, "scenario", "from-cassette", "--cassette", bad, "--out", badOut)
	if code != 1 || !strings.Contains(stderr, "interaction 1") || !strings.Contains(stderr, bad) {
		t.Errorf("from-cassette of an unreadable answer: exit %d, %s; want 1 naming the cassette and the interaction", code, stderr)
	}
	if _, err := os.Stat(badOut); err == nil {
		t.Errorf("from-cassette wrote %s from an unreadable answer", badOut)
	}
}

// TestFromCassetteEntryPerConversation: each recorded conversation begins
// at an entry step of its own and its steps' then lists only what followed
// in the recording, so a test may run any conversation first, alone, with
// no header; a conversation that begins as an earlier one did follows it.
func TestFromCassetteEntryPerConversation(t *testing.T) {
	dir := t.TempDir()
	cas := filepath.Join(dir, "suite.cassette")
	answer := func(id, text string) string {
		return `{"id":"` + id + `","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` + text + `"},"finish_reason":"stop"}]}`
	}
	const (
		hello    = `{"model":"m","messages":[{"role":"user","content":"hello"}]}`
		weather  = `{"model":"m","messages":[{"role":"user","content":"weather?"}]}`
		helloBye = `{"model":"m","messages":[{"role":"user","content":"hello"},{"role":"assistant","content":"Hi!"},{"role":"user","content":"bye"}]}`
	)
	oddCassette(t, cas,
		odd{"openai-chat", "/v1/chat/completions", hello, 200, answer("c1", "Hi!")},
		odd{"openai-chat", "/v1/chat/completions", weather, 200, answer("c2", "Sunny.")},
		odd{"openai-chat", "/v1/chat/completions", helloBye, 200, answer("c3", "Bye.")},
		odd{"openai-chat", "/v1/chat/completions", hello, 200, answer("c4", "Hi again!")},
	)
	out := filepath.Join(dir, "suite.yaml")
	if code, stdout, stderr := runCLI(t, "scenario", "from-cassette", "--cassette", cas, "--out", out); code != 0 {
		t.Fatalf("from-cassette: exit %d\n%s%s", code, stdout, stderr)
	}
	s, err := scenario.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	type shape struct {
		start    bool
		then     string
		complete bool
	}
	want := map[string]shape{
		"i1": {true, "i3", false},  // hello, then bye
		"i2": {true, "", true},     // weather, alone
		"i3": {false, "i4", false}, // bye; the next conversation began as this one did
		"i4": {false, "", true},    // hello again
	}
	for _, st := range s.Steps {
		got := shape{st.Start != nil && *st.Start, strings.Join(st.Then, ","), st.Complete}
		if got != want[st.ID] {
			t.Errorf("step %s: start %v then %q complete %v, want %+v", st.ID, got.start, got.then, got.complete, want[st.ID])
		}
	}
	// The weather test first and alone, then the greeting: no header.
	m := proxytest.NewScenario(t, out, proxytest.AllowUnused())
	for _, x := range []struct{ body, text string }{{weather, "Sunny."}, {hello, "Hi!"}, {helloBye, "Bye."}} {
		resp, err := http.Post(m.BaseURL()+"/v1/chat/completions", "application/json", strings.NewReader(x.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), x.text) {
			t.Errorf("%s: %d %s, want %q", x.body, resp.StatusCode, b, x.text)
		}
	}
}
