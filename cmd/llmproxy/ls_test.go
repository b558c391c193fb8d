package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
)

// lsLoop is the tool call every interaction of the ls cassette makes.
var lsLoop = fake.ToolLoop{
	Tool:   "weather",
	Args:   `{"location":"Paris","unit":"celsius"}`,
	CallID: "call_paris",
	Answer: "It is 21 °C and sunny in Paris.",
}

// recordProviders records, through a real proxy, one tool call on each of
// Anthropic Messages (JSON), Gemini (alt=sse stream, then JSON, whose
// arguments are pretty-printed across lines) and the Responses API (SSE
// stream), and returns the cassette's path.
func recordProviders(t *testing.T) string {
	t.Helper()
	ups := map[string]*fake.Upstream{
		"anthropic": fake.New(t, fake.AnthropicMessages(lsLoop)),
		"gemini":    fake.New(t, fake.Gemini(lsLoop)),
		"openai":    fake.New(t, fake.OpenAIResponses(lsLoop)),
	}
	named := map[string]*url.URL{}
	for name, up := range ups {
		u, err := url.Parse(up.URL())
		if err != nil {
			t.Fatal(err)
		}
		named[name] = u
	}
	path := filepath.Join(t.TempDir(), "providers.cassette")
	c, err := cassette.Open(path, cassette.Options{Version: version})
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(proxy.Config{Mode: proxy.ModeRecord, Cassette: c, Upstreams: named})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	requests := []struct{ path, body string }{
		{"/anthropic/v1/messages",
			`{"model":"claude-sonnet-4-6","max_tokens":1024,"messages":[{"role":"user","content":"What's the weather in Paris?"}],"tools":[{"name":"weather","input_schema":{"type":"object"}}]}`},
		{"/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
			`{"contents":[{"role":"user","parts":[{"text":"What's the weather in Paris?"}]}],"tools":[{"functionDeclarations":[{"name":"weather"}]}]}`},
		{"/gemini/v1beta/models/gemini-2.5-flash:generateContent",
			`{"contents":[{"role":"user","parts":[{"text":"What's the weather in Paris?"}]}],"tools":[{"functionDeclarations":[{"name":"weather"}]}]}`},
		{"/openai/v1/responses",
			`{"model":"gpt-5.5","stream":true,"input":"What's the weather in Paris?","tools":[{"type":"function","name":"weather","parameters":{"type":"object"}}]}`},
	}
	for _, r := range requests {
		resp, err := http.Post(srv.URL+r.path, "application/json", strings.NewReader(r.body))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d %s", r.path, resp.StatusCode, body)
		}
	}
	srv.Close()
	p.Close()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLsShowsKindsAndToolCalls lists a cassette holding Anthropic, Gemini and
// Responses interactions: each on one line with its API kind and the tool
// call its response made, arguments compacted (Gemini's has no id on the
// wire, so it shows the synthetic one).
func TestLsShowsKindsAndToolCalls(t *testing.T) {
	path := recordProviders(t)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"ls", "--cassette", path}, &out, &errb); code != 0 {
		t.Fatalf("llmproxy ls exited %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("ls printed %d lines, want a header and 4 interactions:\n%s", len(lines), out.String())
	}
	call := `weather({"location":"Paris","unit":"celsius"})`
	want := []struct {
		fields []string // the line's fields before the tool calls, the model and age (just recorded) included
		call   string
	}{
		{[]string{"1", "anthropic", "anthropic-messages", "POST", "/anthropic/v1/messages", "200", "no", "claude-sonnet-4-6", "<1m"}, call + " call_paris"},
		{[]string{"2", "gemini", "gemini", "POST", "/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent", "200", "sse", "gemini-2.5-flash", "<1m"}, call + " #weather#1"},
		{[]string{"3", "gemini", "gemini", "POST", "/gemini/v1beta/models/gemini-2.5-flash:generateContent", "200", "no", "gemini-2.5-flash", "<1m"}, call + " #weather#1"},
		{[]string{"4", "openai", "openai-responses", "POST", "/v1/responses", "200", "sse", "gpt-5.5", "<1m"}, call + " call_paris"},
	}
	for n, w := range want {
		line := lines[n+1]
		got := strings.Fields(line)
		if len(got) < len(w.fields) || strings.Join(got[:len(w.fields)], " ") != strings.Join(w.fields, " ") {
			t.Errorf("line %d = %q, want it to start with %q", n+1, line, strings.Join(w.fields, " "))
			continue
		}
		if tools := strings.Join(got[len(w.fields):], " "); tools != w.call {
			t.Errorf("line %d tool calls = %q, want %q", n+1, tools, w.call)
		}
	}
	golden(t, "ls.golden", bytes.ReplaceAll(out.Bytes(), []byte(path), []byte("CASSETTE")))
}
