package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmproxy/llmproxy/fixture"
	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/wire"
)

// post sends body to path in conversation conv and returns the answer.
func (m *mockServer) post(path, conv string, body string, hdr ...string) (int, http.Header, string) {
	m.t.Helper()
	req, err := http.NewRequest(http.MethodPost, m.srv.URL+path, strings.NewReader(body))
	if err != nil {
		m.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if conv != "" {
		req.Header.Set(proxy.ConversationHeader, conv)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		m.t.Fatalf("POST %s: reading: %v", path, err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// chatBody is an OpenAI chat request: the weather question, and when result
// is not "", the call and the tool result.
func chatBody(result string, stream bool) string {
	msgs := []any{map[string]any{"role": "user", "content": weatherPrompt}}
	if result != "" {
		msgs = append(msgs,
			map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "call_paris", "type": "function",
				"function": map[string]any{"name": "weather", "arguments": `{"location":"Paris","unit":"celsius"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_paris", "content": result})
	}
	b, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "messages": msgs, "stream": stream})
	return string(b)
}

func TestMockAPI(t *testing.T) {
	m := startMock(t, []string{weatherScenario}, func(c *proxy.Config) {
		c.ScenarioFiles = map[string]string{"weather": "scenarios/weather.yaml"}
	})
	var health map[string]string
	if st := m.getJSON("/_llmproxy/health", &health); st != 200 || health["mode"] != "mock" || health["status"] != "ok" {
		t.Errorf("health: %d %v", st, health)
	}
	var unused struct {
		Unused []struct {
			Scenario string
			Steps    []string
		}
	}
	m.getJSON("/_llmproxy/unused", &unused)
	if fmt.Sprint(unused.Unused) != "[{weather [ask answer]}]" {
		t.Errorf("unused before: %v", unused.Unused)
	}
	if st := m.getJSON("/_llmproxy/fixtures/call_paris", nil); st != http.StatusNotFound {
		t.Errorf("fixture before any call: %d, want 404", st)
	}
	if st, _, body := m.post("/v1/chat/completions", "c1", chatBody("", false)); st != 200 {
		t.Fatalf("ask: %d %s", st, body)
	}
	m.getJSON("/_llmproxy/unused", &unused)
	if fmt.Sprint(unused.Unused) != "[{weather [answer]}]" {
		t.Errorf("unused after ask: %v", unused.Unused)
	}
	ex, err := fixture.NewProxyExecutor(m.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ex.Execute(context.Background(), wire.ToolCall{ID: "call_paris", Name: "weather", Arguments: json.RawMessage(`{"location":"Paris"}`)})
	if err != nil {
		t.Fatalf("executor: %v", err)
	}
	if !jsonEqual(string(res.Content), weatherResult) {
		t.Errorf("executor result %s, want %s", res.Content, weatherResult)
	}
	if st, _, body := m.post("/v1/chat/completions", "c1", chatBody(weatherResult, false)); st != 200 {
		t.Fatalf("answer: %d %s", st, body)
	}
	log := m.log()
	if len(log) != 2 {
		t.Fatalf("log has %d entries, want 2: %+v", len(log), log)
	}
	ask, answer := log[0], log[1]
	if ask.Scenario != "weather" || ask.Conversation != "c1" || ask.Step != "ask" || len(ask.ToolCalls) != 1 || ask.ToolCalls[0].ID != "call_paris" {
		t.Errorf("ask entry: %+v", ask)
	}
	if answer.Step != "answer" || len(answer.ToolResults) != 1 || answer.ToolResults[0].ID != "call_paris" {
		t.Errorf("answer entry: %+v", answer)
	}
	m.getJSON("/_llmproxy/unused", &unused)
	if fmt.Sprint(unused.Unused) != "[{weather []}]" {
		t.Errorf("unused at the end: %v", unused.Unused)
	}
	if u := m.p.UnusedSteps(); len(u) != 0 {
		t.Errorf("UnusedSteps: %v", u)
	}
	// The API's Host guard applies in mock mode too.
	req, _ := http.NewRequest(http.MethodGet, m.srv.URL+"/_llmproxy/health", nil)
	req.Host = "rebind.example"
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Errorf("health for Host rebind.example: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("health for Host rebind.example: %s, want refused", resp.Status)
		}
	}
	resp, err := http.Get(m.srv.URL + "/_llmproxy/ui/scenario")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"weather <small>scenarios/weather.yaml</small>", "ask", "tool-result fixture paris", "fixture paris"} {
		if resp.StatusCode != 200 || !strings.Contains(string(page), want) {
			t.Errorf("scenario page (%d) lacks %q", resp.StatusCode, want)
		}
	}
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// A tool result that differs from the fixture is a scenario_miss naming the
// step and the condition, and consumes nothing; one equal as JSON but
// spelled otherwise is answered.
func TestMockChangedToolResultMisses(t *testing.T) {
	var missed []string
	var mu sync.Mutex
	m := startMock(t, []string{weatherScenario}, func(c *proxy.Config) {
		c.OnMiss = func(msg string) { mu.Lock(); missed = append(missed, msg); mu.Unlock() }
	})
	if st, _, body := m.post("/v1/chat/completions", "", chatBody("", false)); st != 200 {
		t.Fatalf("ask: %d %s", st, body)
	}
	changed := strings.Replace(weatherResult, "21", "22", 1)
	st, h, body := m.post("/v1/chat/completions", "", chatBody(changed, false))
	if st != 400 || h.Get(proxy.MissHeader) != "1" {
		t.Fatalf("changed result: %d miss=%q %s", st, h.Get(proxy.MissHeader), body)
	}
	var e struct {
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatal(err)
	}
	if e.Error.Type != "scenario_miss" || !strings.Contains(e.Error.Message, `step "answer"`) || !strings.Contains(e.Error.Message, "tool-result") {
		t.Errorf("miss error: %+v", e.Error)
	}
	if len(missed) != 1 {
		t.Errorf("OnMiss saw %d misses", len(missed))
	}
	respelled := `{ "condition": "sunny", "unit": "celsius", "temperature": 21.0, "location": "Paris" }`
	st, _, body = m.post("/v1/chat/completions", "", chatBody(respelled, false))
	if st != 200 || !strings.Contains(body, "Paris is sunny") {
		t.Errorf("respelled result: %d %s", st, body)
	}
}

// errorScenario answers first with an error, then with text.
func errorScenario(status int, retryAfter string) string {
	return fmt.Sprintf(`version: 1
name: flaky
steps:
  - id: fail
    respond: {error: {status: %d, message: "scripted failure", retry-after: %s}}
  - id: ok
    respond: {text: "recovered"}
`, status, retryAfter)
}

func TestMockErrorStepMetByOpenAIRetry(t *testing.T) {
	m := startMock(t, []string{errorScenario(500, "1ms")})
	client := openai.NewClient(option.WithBaseURL(m.srv.URL+"/v1/"), option.WithAPIKey(testKey))
	cc, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err != nil {
		t.Fatalf("with default retries: %v", err)
	}
	if cc.Choices[0].Message.Content != "recovered" {
		t.Errorf("content %q", cc.Choices[0].Message.Content)
	}
	var steps []string
	for _, e := range m.log() {
		steps = append(steps, fmt.Sprintf("%s:%d", e.Step, e.Status))
	}
	if strings.Join(steps, " ") != "fail:500 ok:200" {
		t.Errorf("log: %v", steps)
	}
}

func TestMockRateLimitWithoutRetries(t *testing.T) {
	m := startMock(t, []string{errorScenario(429, "2s")})
	client := openai.NewClient(option.WithBaseURL(m.srv.URL+"/v1/"), option.WithAPIKey(testKey), option.WithMaxRetries(0))
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 429 {
		t.Fatalf("err %v, want a 429", err)
	}
	if ra := oe.Response.Header.Get("Retry-After"); ra != "2" {
		t.Errorf("Retry-After %q, want 2", ra)
	}
	if oe.Message != "scripted failure" {
		t.Errorf("message %q", oe.Message)
	}
}

const cutScenario = `version: 1
name: cut
steps:
  - id: broken
    respond: {text: "one two three four five six", cut-after: 2}
  - id: whole
    respond: {text: "whole answer"}
`

func TestMockCutStreamIsAnSDKError(t *testing.T) {
	m := startMock(t, []string{cutScenario})
	client := openai.NewClient(option.WithBaseURL(m.srv.URL+"/v1/"), option.WithAPIKey(testKey), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	s := client.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	n := 0
	for s.Next() {
		acc.AddChunk(s.Current())
		n++
	}
	if s.Err() == nil {
		t.Fatalf("a cut stream ended without error after %d chunks: %v", n, acc.Choices)
	}
	if n != 2 {
		t.Errorf("saw %d chunks before the cut, want 2", n)
	}
	// The cut step was delivered as scripted: the next request meets the next step.
	s = client.Chat.Completions.NewStreaming(context.Background(), params)
	acc = openai.ChatCompletionAccumulator{}
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil || acc.Choices[0].Message.Content != "whole answer" {
		t.Errorf("after the cut: %v %v", err, acc.Choices)
	}
}

// TestMockCutAnswerNotStreamed: a cut-after step met by a request that does
// not stream closes the connection after the headers, before the body, so
// the client sees a broken answer rather than the whole one; the step counts
// as delivered.
func TestMockCutAnswerNotStreamed(t *testing.T) {
	m := startMock(t, []string{cutScenario})
	client := openai.NewClient(option.WithBaseURL(m.srv.URL+"/v1/"), option.WithAPIKey(testKey), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	if c, err := client.Chat.Completions.New(context.Background(), params); err == nil {
		t.Fatalf("a cut answer arrived whole: %+v", c.Choices)
	}
	req, err := http.NewRequest(http.MethodPost, m.srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(proxy.ConversationHeader, "raw")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !errors.Is(err, io.ErrUnexpectedEOF) || len(body) != 0 {
		t.Errorf("raw: status %d, read %q, error %v; want 200, nothing, unexpected EOF", resp.StatusCode, body, err)
	}
	c, err := client.Chat.Completions.New(context.Background(), params)
	if err != nil || c.Choices[0].Message.Content != "whole answer" {
		t.Errorf("after the cut: %v %+v", err, c)
	}
}

func TestMockParallelConversations(t *testing.T) {
	m := startMock(t, []string{weatherScenario})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr, err := openaiGoLoop(context.Background(), m.client(fmt.Sprint("p", i)), m.srv.URL, weatherPrompt, i%2 == 0)
			if err == nil && tr.answer != "Paris is sunny, 21 °C." {
				err = fmt.Errorf("conversation p%d: %v", i, tr)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(m.log()); n != 32 {
		t.Errorf("log has %d entries, want 32", n)
	}
}

// A client that leaves during the delay consumes nothing.
func TestMockClientLeavingConsumesNothing(t *testing.T) {
	slow := strings.Replace(weatherScenario, "    respond: {tool-calls: [{fixture: paris}]}", "    respond: {tool-calls: [{fixture: paris}], delay: 300ms}", 1)
	m := startMock(t, []string{slow}, func(c *proxy.Config) { c.Pace = proxy.PaceScripted })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, m.srv.URL+"/v1/chat/completions", strings.NewReader(chatBody("", false)))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the request outlived its 30ms deadline: %s", resp.Status)
	}
	// The ask was not consumed: asking again meets it, and only then the
	// result meets the answer.
	st, _, body := m.post("/v1/chat/completions", "", chatBody("", false))
	if st != 200 || !strings.Contains(body, "call_paris") {
		t.Errorf("ask again: %d %s", st, body)
	}
	st, _, body = m.post("/v1/chat/completions", "", chatBody(weatherResult, false))
	if st != 200 || !strings.Contains(body, "Paris is sunny") {
		t.Errorf("result: %d %s", st, body)
	}
}

// The same requests give byte-identical answers from two servers.
func TestMockDeterministic(t *testing.T) {
	requests := []struct{ path, body string }{
		{"/v1/chat/completions", chatBody("", true)},
		{"/v1/chat/completions", chatBody(weatherResult, false)},
	}
	var runs [2][]string
	for r := range runs {
		m := startMock(t, []string{weatherScenario})
		for _, q := range requests {
			st, h, body := m.post(q.path, "", q.body)
			runs[r] = append(runs[r], fmt.Sprint(st, h.Get("Content-Type"), "\n", body))
		}
	}
	for n := range requests {
		if runs[0][n] != runs[1][n] {
			t.Errorf("request %d answered differently:\n%s\n---\n%s", n, runs[0][n], runs[1][n])
		}
	}
	if !strings.Contains(runs[0][0], "chatcmpl-weather-1") || !strings.Contains(runs[0][1], "chatcmpl-weather-2") {
		t.Errorf("ids not as documented:\n%s", strings.Join(runs[0], "\n"))
	}
}

func TestMockGeminiStreamForms(t *testing.T) {
	m := startMock(t, []string{weatherScenario})
	body := `{"contents":[{"role":"user","parts":[{"text":"What's the weather in Paris?"}]}]}`
	st, h, got := m.post("/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent", "array", body)
	var arr []map[string]any
	if st != 200 || json.Unmarshal([]byte(got), &arr) != nil || len(arr) == 0 {
		t.Errorf("JSON array stream: %d %s %s", st, h.Get("Content-Type"), got)
	}
	st, h, got = m.post("/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "sse", body)
	if st != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") || !strings.HasPrefix(got, "data: ") {
		t.Errorf("SSE stream: %d %s %s", st, h.Get("Content-Type"), got)
	}
}

func TestMockBadRequests(t *testing.T) {
	m := startMock(t, []string{weatherScenario, strings.NewReplacer("name: cut", "name: other", ", cut-after: 2", "").Replace(cutScenario)}, func(c *proxy.Config) { c.MaxBody = 1000 })
	pick := []string{proxy.ScenarioHeader, "weather"}
	cases := []struct {
		name, path, body string
		hdr              []string
		status           int
		says             string
	}{
		{"not JSON", "/v1/chat/completions", `{"model":`, pick, 400, "not valid JSON"},
		{"too large", "/v1/chat/completions", `{"model":"` + strings.Repeat("x", 2000) + `"}`, pick, 413, "--max-body"},
		{"not a chat API", "/v1/embeddings", `{"model":"e","input":"x"}`, pick, 400, "not a chat API"},
		{"no scenario named", "/v1/chat/completions", chatBody("", false), nil, 400, "several scenarios (other, weather)"},
		{"unknown scenario", "/v1/chat/completions", chatBody("", false), []string{proxy.ScenarioHeader, "nope"}, 400, "names no scenario served; the scenarios are: other, weather"},
		{"wrong shape", "/anthropic/v1/messages", `{"messages":"x"}`, pick, 400, "messages"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, _, body := m.post(c.path, "", c.body, c.hdr...)
			if st != c.status || !strings.Contains(body, c.says) {
				t.Errorf("%d %s, want %d saying %q", st, body, c.status, c.says)
			}
		})
	}
	// The other scenario is picked by its header.
	st, _, body := m.post("/v1/chat/completions", "", chatBody("", false), proxy.ScenarioHeader, "other")
	if st != 200 || !strings.Contains(body, "one two") {
		t.Errorf("scenario other: %d %s", st, body)
	}
}

// After the last step, on-exhausted decides; past max-steps every request
// is a miss.
func TestMockExhaustedAndMaxSteps(t *testing.T) {
	script := func(extra string) string {
		return "version: 1\nname: two\n" + extra + "steps:\n  - respond: {text: first}\n  - respond: {text: second}\n"
	}
	tests := []struct {
		name, extra string
		want        []string // the text of each of four answers, or "miss"
	}{
		{"reject", "", []string{"first", "second", "miss", "miss"}},
		{"repeat-last", "on-exhausted: repeat-last\n", []string{"first", "second", "second", "second"}},
		{"restart", "on-exhausted: restart\n", []string{"first", "second", "first", "second"}},
		{"max-steps", "on-exhausted: restart\nmax-steps: 3\n", []string{"first", "second", "first", "miss"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := startMock(t, []string{script(tt.extra)})
			var got []string
			for range tt.want {
				// The requests carry no history: the conversation is named.
				st, h, body := m.post("/anthropic/v1/messages", "c", `{"model":"claude-sonnet-4-6","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
				switch {
				case st == 400 && h.Get(proxy.MissHeader) == "1" && strings.Contains(body, "scenario_miss"):
					got = append(got, "miss")
				case st == 200:
					var msg struct{ Content []struct{ Text string } }
					if err := json.Unmarshal([]byte(body), &msg); err != nil || len(msg.Content) != 1 {
						t.Fatalf("answer %s: %v", body, err)
					}
					got = append(got, msg.Content[0].Text)
				default:
					t.Fatalf("%d %s", st, body)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("answers %v, want %v", got, tt.want)
			}
		})
	}
}

// TestMockOllamaGenerate: mock answers Ollama's /api/generate in its own
// shape, the text in "response" (no "message"), whole with "stream":false
// and as NDJSON otherwise, the last line done with its reason and counters.
func TestMockOllamaGenerate(t *testing.T) {
	m := startMock(t, []string{"version: 1\nname: gen\non-exhausted: repeat-last\nsteps:\n  - when: {latest-user: {equals: Weather?}}\n    respond: {text: Paris is sunny.}\n"})
	for _, tt := range []struct {
		name, body, contentType string
	}{
		{"whole", `{"model":"llama3.2","prompt":"Weather?","stream":false}`, "application/json"},
		{"streamed", `{"model":"llama3.2","prompt":"Weather?"}`, "application/x-ndjson"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, h, body := m.post("/ollama/api/generate", tt.name, tt.body)
			if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), tt.contentType) {
				t.Fatalf("%d %s: %s", status, h.Get("Content-Type"), body)
			}
			lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
			var text strings.Builder
			for i, line := range lines {
				var doc map[string]any
				if err := json.Unmarshal([]byte(line), &doc); err != nil {
					t.Fatalf("line %d %q: %v", i, line, err)
				}
				if _, ok := doc["message"]; ok {
					t.Errorf("line %d has a chat message: %s", i, line)
				}
				response, ok := doc["response"].(string)
				if !ok || doc["model"] != "llama3.2" || doc["created_at"] == nil {
					t.Errorf("line %d lacks generate's model, created_at or response: %s", i, line)
				}
				text.WriteString(response)
				last := i == len(lines)-1
				if doc["done"] != last || last && (doc["done_reason"] != "stop" || doc["eval_count"] == nil || doc["total_duration"] == nil) {
					t.Errorf("line %d of %d: done %v, done_reason %v, eval_count %v", i, len(lines), doc["done"], doc["done_reason"], doc["eval_count"])
				}
			}
			if text.String() != "Paris is sunny." {
				t.Errorf("response %q", text.String())
			}
		})
	}
}

// TestMockConversationNames: a conversation name longer than 256 bytes is a
// clear 400; past 10 000 named conversations a new one, default included,
// is still answered (the least recently used is forgotten).
func TestMockConversationNames(t *testing.T) {
	m := startMock(t, []string{"version: 1\nname: names\nsteps:\n  - respond: {text: hi}\n"})
	body := `{"model":"m","messages":[{"role":"user","content":"q"}]}`
	st, _, resp := m.post("/v1/chat/completions", strings.Repeat("x", 257), body)
	if st != 400 || !strings.Contains(resp, "conversation name too long") || !strings.Contains(resp, "at most 256") {
		t.Errorf("a 257-byte name: %d %s", st, resp)
	}
	for i := range 10001 {
		if st, _, resp := m.post("/v1/chat/completions", fmt.Sprint("c", i), body); st != 200 {
			t.Fatalf("conversation %d: %d %s", i, st, resp)
		}
	}
	if st, _, resp := m.post("/v1/chat/completions", "default", body); st != 200 {
		t.Errorf("default after 10 001 conversations: %d %s", st, resp)
	}
}
