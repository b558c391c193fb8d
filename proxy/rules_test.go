package proxy_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/proxy"
)

func TestRulesFileDecidesMatching(t *testing.T) {
	const recorded = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"metadata":{"run":"1"},"user":"u1"}`
	up := fake.New(t, numberedAnswers(1, 0))
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.URL())
	send := func(base, query, beta, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions"+query, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("OpenAI-Beta", beta)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := send(rec.URL(), "?api-version=1", "assistants=v2", recorded); status != http.StatusOK {
		t.Fatalf("recording: %d %s", status, body)
	}
	rec.stop()

	rulesFile := filepath.Join(t.TempDir(), "rules.json")
	err := os.WriteFile(rulesFile, []byte(`{"ignore":["metadata"],"ignore_by_kind":{"openai-chat":["user"]},"ignore_query":["api-version"],"headers":["OpenAI-Beta"]}`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fileRules, err := match.LoadRules(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		rules match.Rules
		query string
		beta  string
		body  string
		miss  string // the difference the miss names; "" for a match
	}{
		{"as recorded", fileRules, "?api-version=1", "assistants=v2", recorded, ""},
		{"metadata ignored", fileRules, "?api-version=1", "assistants=v2", strings.Replace(recorded, `"run":"1"`, `"run":"2"`, 1), ""},
		{"user ignored for openai-chat", fileRules, "?api-version=1", "assistants=v2", strings.Replace(recorded, `"u1"`, `"u2"`, 1), ""},
		{"query parameter ignored", fileRules, "?api-version=2", "assistants=v2", recorded, ""},
		{"header compared", fileRules, "?api-version=1", "assistants=v1", recorded, "header.Openai-Beta: got assistants=v1, recorded assistants=v2"},
		{"other paths still compared", fileRules, "?api-version=1", "assistants=v2", strings.Replace(recorded, `"hi"`, `"hello"`, 1), "messages.0.content"},
		{"without the file, metadata counts", match.Rules{}, "?api-version=1", "assistants=v2", strings.Replace(recorded, `"run":"1"`, `"run":"2"`, 1), "metadata.run"},
		{"merged with --ignore", match.MergeRules(fileRules, match.Rules{Ignore: []string{"messages"}}), "?api-version=1", "assistants=v2",
			strings.Replace(recorded, `"hi"`, `"hello"`, 1), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := cassette.NewRedactor(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			m, err := cassette.NewIndexer(tt.rules, r)
			if err != nil {
				t.Fatal(err)
			}
			rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.Indexer, c.Redactor = m, r })
			status, body := send(rep.URL(), tt.query, tt.beta, tt.body)
			switch {
			case tt.miss == "" && status != http.StatusOK:
				t.Errorf("status %d %s, want a match", status, body)
			case tt.miss != "" && (status != http.StatusBadRequest || !strings.Contains(body, tt.miss)):
				t.Errorf("status %d %s, want a miss naming %q", status, body, tt.miss)
			}
		})
	}
}
