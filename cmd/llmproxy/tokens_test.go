package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/exampletest"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/proxy"
)

// wireCall is one request of the usage cassette: where it goes, the
// captured request body it sends and the captured answer the fake
// upstream sends back.
type wireCall struct{ upstream, path, request, answer string }

// usageCalls cover every wire's usage fields, streamed and not: OpenAI
// chat (JSON, and a stream whose usage comes in its last chunk with
// stream_options.include_usage), Responses (response.completed, and a JSON
// answer), Anthropic (message_start and message_delta, and a JSON answer),
// Gemini (an SSE stream with thoughtsTokenCount, and a JSON answer),
// Ollama (the last NDJSON line), Bedrock InvokeModel (Anthropic's and
// Nova's event stream chunks, Nova's and Titan's whole answers, Llama's
// chunks ending with the invocation metrics). Three of them continue a
// conversation.
var usageCalls = []wireCall{
	{"openai", "/openai/v1/chat/completions", "openai-chat-toolcalls.request.json", "openai-chat-toolcalls.response.json"},
	{"openai", "/openai/v1/chat/completions", "openai-chat-stream-toolcalls.request.json", "openai-chat-stream-toolcalls.sse"},
	{"openai", "/openai/v1/chat/completions", "openai-chat-stream-toolresult.request.json", "openai-chat-stream-text-after-toolresult.sse"},
	{"openai", "/openai/v1/responses", "openai-responses-functioncall.request.json", "openai-responses-stream-functioncall.sse"},
	{"openai", "/openai/v1/responses", "openai-responses-functioncall-output.request.json", "openai-responses-functioncall-output.response.json"},
	{"anthropic", "/anthropic/v1/messages", "anthropic-messages-tooluse.request.json", "anthropic-messages-stream-tooluse.sse"},
	{"anthropic", "/anthropic/v1/messages", "anthropic-messages-toolresult.request.json", "anthropic-messages-tooluse.response.json"},
	{"gemini", "/gemini/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse", "gemini-streamgeneratecontent-sse-functioncall.request.json", "gemini-streamgeneratecontent-sse-functioncall.sse"},
	{"gemini", "/gemini/v1beta/models/gemini-2.5-pro:generateContent", "gemini-generatecontent-functioncall.request.json", "gemini-generatecontent-functioncall-thinking.response.json"},
	{"ollama", "/ollama/api/chat", "ollama-api-chat-stream-toolcalls.request.json", "ollama-api-chat-stream-toolcalls.ndjson"},
	{"bedrock", "/bedrock/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/invoke-with-response-stream", "bedrock/invoke-anthropic-tooluse.request.json", "bedrock/invoke-stream-anthropic-tooluse.eventstream"},
	{"bedrock", "/bedrock/model/us.amazon.nova-lite-v1%3A0/invoke-with-response-stream", "bedrock/invoke-nova-tooluse.request.json", "bedrock/invoke-stream-nova-tooluse.eventstream"},
	{"bedrock", "/bedrock/model/us.amazon.nova-lite-v1%3A0/invoke", "bedrock/invoke-nova-toolresult.request.json", "bedrock/invoke-nova-text.response.json"},
	{"bedrock", "/bedrock/model/amazon.titan-text-express-v1/invoke", "bedrock/invoke-titan-text.request.json", "bedrock/invoke-titan-text.response.json"},
	{"bedrock", "/bedrock/model/meta.llama3-8b-instruct-v1%3A0/invoke-with-response-stream", "bedrock/invoke-llama-text.request.json", "bedrock/invoke-stream-llama-text.eventstream"},
}

// servedCaptured is the fake's script sending a captured answer: an AWS
// event stream with Bedrock's content type, any other as ServeCaptured
// does.
func servedCaptured(name string) fake.Script {
	if strings.HasSuffix(name, ".eventstream") {
		return fake.Verbatim(http.StatusOK, http.Header{"Content-Type": {"application/vnd.amazon.eventstream"}}, fake.Captured(name))
	}
	return fake.ServeCaptured(name)
}

// recordUsage records usageCalls through a real proxy from fake upstreams
// that send the captured bytes, into a new cassette at path.
func recordUsage(t *testing.T, path string) {
	t.Helper()
	answers := map[string][]fake.Script{}
	for _, c := range usageCalls {
		answers[c.upstream] = append(answers[c.upstream], servedCaptured(c.answer))
	}
	named := map[string]*url.URL{}
	for name, scripts := range answers {
		u, err := url.Parse(fake.New(t, fake.Sequence(scripts...)).URL())
		if err != nil {
			t.Fatal(err)
		}
		named[name] = u
	}
	c, err := cassette.Open(path, cassette.Options{Version: version})
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(proxy.Config{Mode: proxy.ModeRecord, Cassette: c, Upstreams: named})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	for _, call := range usageCalls {
		resp, err := http.Post(srv.URL+call.path, "application/json", strings.NewReader(string(fake.Captured(call.request))))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d %s", call.path, resp.StatusCode, body)
		}
	}
	srv.Close()
	p.Close()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReportWires: llmproxy report sums the usage of every wire, per model
// and conversation, as text and as JSON, and prices it.
func TestReportWires(t *testing.T) {
	dir := t.TempDir()
	cas := filepath.Join(dir, "wires.cassette")
	recordUsage(t, cas)
	prices := filepath.Join(dir, "prices.yaml")
	os.WriteFile(prices, []byte("gpt-4o-mini: {input: 0.15, output: 0.60, cached: 0.075}\n"+
		"gpt-5.5: {input: 1.25, output: 10, cached: 0.125}\n"+
		"gemini-2.5-pro: {input: 1.25, output: 10}\n"+
		"claude-3-opus: {input: 15, output: 75}\n"), 0o644)
	for _, tt := range []struct {
		golden string
		args   []string
	}{
		{"report/wires.txt", nil},
		{"report/wires.json", []string{"--format", "json"}},
		{"report/wires-priced.txt", []string{"--prices", prices}},
		{"report/wires-priced.json", []string{"--prices", prices, "--format", "json"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			code, stdout, stderr := cli(t, append([]string{"report", "--cassette", cas}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			out := strings.ReplaceAll(stdout, dir+string(filepath.Separator), "DIR/")
			golden(t, tt.golden, []byte(out))
		})
	}
}

// TestReportDirPerTest: --cassette-dir sums each cassette as one test's.
func TestReportDirPerTest(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "test_module"), 0o755)
	recordUsage(t, filepath.Join(dir, "test_module", "test_one.cassette"))
	recordUsage(t, filepath.Join(dir, "test_module", "test_two.cassette"))
	code, stdout, stderr := cli(t, "report", "--cassette-dir", dir, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r tokenReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Cassettes) != 2 || r.Cassettes[0].Test != "test_module/test_one" || r.Cassettes[1].Test != "test_module/test_two" {
		t.Fatalf("tests %+v", r.Cassettes)
	}
	one := r.Cassettes[0].Total
	if one.Input == 0 || one.Output == 0 || r.Total.Input != 2*one.Input || r.Total.Output != 2*one.Output || r.Total.Requests != 2*len(usageCalls) {
		t.Errorf("total %+v, want twice one test's %+v", r.Total, one)
	}
	code, text, _ := cli(t, "report", "--cassette-dir", dir)
	if code != 0 || !strings.Contains(text, "TEST ") || !strings.Contains(text, "test_module/test_two 1 ") {
		t.Errorf("text report lacks the per-test table:\n%s", text)
	}
}

// TestReportBadInput: usage mistakes exit 2, a bad prices file or cassette
// exits 1 naming it.
func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	cas := filepath.Join(dir, "wires.cassette")
	recordUsage(t, cas)
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no cassette", []string{"report"}, 2, "give --cassette FILE"},
		{"both", []string{"report", "--cassette", cas, "--cassette-dir", dir}, 2, "give --cassette FILE"},
		{"format", []string{"report", "--cassette", cas, "--format", "xml"}, 2, `--format "xml"`},
		{"negative price", []string{"report", "--cassette", cas, "--prices", write("neg.yaml", "gpt-4o-mini:\n  input: 0.15\n  output: -0.6\n")}, 1, "neg.yaml:3: gpt-4o-mini.output: -0.6 is negative"},
		{"string price", []string{"report", "--cassette", cas, "--prices", write("str.json", `{"gpt-4o-mini": {"input": "cheap", "output": 1}}`)}, 1, `str.json:1: gpt-4o-mini.input: "cheap" is not a number`},
		{"malformed prices", []string{"report", "--cassette", cas, "--prices", write("bad.json", `{"gpt-4o-mini": `)}, 1, "bad.json: yaml:"},
		{"missing prices", []string{"report", "--cassette", cas, "--prices", filepath.Join(dir, "none.yaml")}, 1, "none.yaml"},
		{"not a cassette", []string{"report", "--cassette", write("junk.cassette", "junk")}, 1, "junk.cassette"},
		{"empty dir", []string{"report", "--cassette-dir", t.TempDir()}, 1, "no *.cassette file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := cli(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d saying %q", code, stderr, tt.code, tt.want)
			}
			if strings.Contains(stderr, "panic") {
				t.Errorf("panic: %s", stderr)
			}
		})
	}
}

// TestWrapperServedTokens: a -- CMD replay's closing line and its report
// say how many requests were served from the cassette and how many tokens
// their recorded answers carry.
func TestWrapperServedTokens(t *testing.T) {
	exampletest.Unsetenv(t, "LLMPROXY_LISTEN")
	dir := t.TempDir()
	cas := filepath.Join(dir, "wires.cassette")
	recordUsage(t, cas)
	var script strings.Builder
	for n, c := range usageCalls {
		body := filepath.Join(dir, filepath.Base(c.request))
		os.WriteFile(body, fake.Captured(c.request), 0o644)
		if n > 0 {
			script.WriteString(" && ")
		}
		script.WriteString(`WRAPPER_TEST_CHILD="postpath=` + c.path + `|$(cat '` + body + `')" "$0"`)
	}
	report := filepath.Join(dir, "run.html")
	// Ten runs of the test binary as CMD take longer than cli's bound
	// under the race detector.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errb bytes.Buffer
	code := run(ctx, []string{"replay", "--cassette", cas, "--report", report, "--", "sh", "-c", script.String(), self(t)}, io.Discard, &errb)
	stderr := errb.String()
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	_, js, _ := cli(t, "report", "--cassette", cas, "--format", "json")
	var want tokenReport
	if err := json.Unmarshal([]byte(js), &want); err != nil {
		t.Fatal(err)
	}
	tot := want.Total
	line := (&servedTokens{Requests: tot.Requests, Input: tot.Input, Cached: tot.Cached, Output: tot.Output, Reasoning: tot.Reasoning}).line()
	if !strings.HasSuffix(stderr, "llmproxy: "+line+"\n") {
		t.Errorf("stderr does not end with %q:\n%s", line, stderr)
	}
	if !strings.Contains(line, fmt.Sprintf("served %d request(s) from cassettes", len(usageCalls))) {
		t.Errorf("closing line %q", line)
	}
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var run runReport
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	if run.Served == nil || run.Served.Requests != tot.Requests || run.Served.Input != tot.Input || run.Served.Output != tot.Output {
		t.Errorf("run report served %+v, want the cassette's total %+v", run.Served, tot)
	}
	page, _ := os.ReadFile(report)
	if !strings.Contains(string(page), "Served from cassettes") {
		t.Errorf("the HTML report has no served section")
	}
}
