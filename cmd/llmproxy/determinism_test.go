package main

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/llmproxy/llmproxy/internal/mocktest"
)

// wireQuestions ask the weather scenario's first question on every wire,
// streamed and not.
var wireQuestions = []struct{ name, path, body string }{
	{"chat", "/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Weather in Paris?"}]}`},
	{"chat stream", "/v1/chat/completions", `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Weather in Paris?"}]}`},
	{"responses", "/v1/responses", `{"model":"gpt-4o-mini","input":"Weather in Paris?"}`},
	{"responses stream", "/v1/responses", `{"model":"gpt-4o-mini","stream":true,"input":"Weather in Paris?"}`},
	{"anthropic", "/anthropic/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":256,"messages":[{"role":"user","content":"Weather in Paris?"}]}`},
	{"anthropic stream", "/anthropic/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"Weather in Paris?"}]}`},
	{"gemini", "/gemini/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[{"role":"user","parts":[{"text":"Weather in Paris?"}]}]}`},
	{"gemini sse", "/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"Weather in Paris?"}]}]}`},
	{"ollama", "/ollama/api/chat", `{"model":"llama3.2","stream":false,"messages":[{"role":"user","content":"Weather in Paris?"}]}`},
	{"ollama stream", "/ollama/api/chat", `{"model":"llama3.2","messages":[{"role":"user","content":"Weather in Paris?"}]}`},
}

// testMockTwoProcesses: two mock processes give byte-identical answers
// (ids and timestamps included) to the same requests on every wire, named
// conversations and sixteen parallel ones read from their requests alike.
func testMockTwoProcesses(t *testing.T, bin string) {
	file, err := filepath.Abs(filepath.Join("..", "..", "docs", "scenarios", "weather.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var answers [2][]string
	var parallel [2]map[string]string
	for run := range answers {
		p := startProc(t, bin, true, "mock", "--scenario", file, "--pace", "instant", "--listen", "127.0.0.1:0")
		for _, q := range wireQuestions {
			answers[run] = append(answers[run], askIn(t, p.base, q.name, q.path, q.body))
		}
		// Sixteen rounds at once on every wire, no conversation header.
		if parallel[run], err = mocktest.Conversations(context.Background(), p.base, 16); err != nil {
			t.Errorf("process %d: %v", run+1, err)
		}
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t); code != 0 {
			t.Errorf("mock exited %d after SIGTERM; stderr:\n%s", code, p.stderr)
		}
	}
	for key, body := range parallel[0] {
		if parallel[1][key] != body {
			t.Errorf("%s without a header: the two processes answered differently:\n%s\n---\n%s", key, body, parallel[1][key])
		}
	}
	for n, q := range wireQuestions {
		if answers[0][n] != answers[1][n] {
			t.Errorf("%s: the two processes answered differently:\n%s\n---\n%s", q.name, answers[0][n], answers[1][n])
		}
		if !strings.Contains(answers[0][n], "Paris") {
			t.Errorf("%s: the answer does not call the weather tool for Paris:\n%s", q.name, answers[0][n])
		}
	}
}

// askIn sends a request in its own conversation and returns the status,
// content type and body, which must be a 200.
func askIn(t *testing.T, base, conversation, path, body string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Llmproxy-Conversation", conversation)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", conversation, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s: %d %v %s", conversation, resp.StatusCode, err, b.Bytes())
	}
	return resp.Header.Get("Content-Type") + "\n" + b.String()
}
