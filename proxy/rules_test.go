package proxy_test

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/fake"
	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/proxy"
)

func TestParseRules(t *testing.T) {
	tests := []struct {
		name, file string
		want       match.Rules
		err        string // a part of the error; "" for none
	}{
		{"all fields", `{"ignore":["metadata"],"ignore_by_kind":{"openai-chat":["user"]},"ignore_query":["api-version"],"headers":["OpenAI-Beta"]}`,
			match.Rules{Ignore: []string{"metadata"}, IgnoreByKind: map[string][]string{"openai-chat": {"user"}},
				IgnoreQuery: []string{"api-version"}, Headers: []string{"OpenAI-Beta"}}, ""},
		{"empty object", `{}`, match.Rules{}, ""},
		{"wildcard path", `{"ignore":["messages.#.name","metadata.*"]}`, match.Rules{Ignore: []string{"messages.#.name", "metadata.*"}}, ""},
		{"unknown field", `{"ignore":["a"],"ignor":["b"]}`, match.Rules{}, `unknown field "ignor" (known fields: ignore, ignore_by_kind, ignore_query, headers)`},
		{"secret_query is not a file field", `{"secret_query":["k"]}`, match.Rules{}, `unknown field "secret_query"`},
		{"wrong type", `{"ignore":"metadata"}`, match.Rules{}, "field ignore: want an array of strings, found a JSON string"},
		{"wrong element type", `{"headers":[1]}`, match.Rules{}, "field headers"},
		{"not an object", `["metadata"]`, match.Rules{}, "want a JSON object, found a JSON array"},
		{"syntax error", "{\n  \"ignore\": [\"a\",]\n}", match.Rules{}, "not valid JSON at line 2"},
		{"cut short", `{"ignore":["a"`, match.Rules{}, "ends early"},
		{"empty file", "  \n", match.Rules{}, "empty"},
		{"two objects", `{} {}`, match.Rules{}, "unexpected data after the JSON object"},
		{"unknown kind", `{"ignore_by_kind":{"openai":["user"]}}`, match.Rules{}, `ignore_by_kind: unknown API kind "openai" (want one of openai-chat,`},
		{"empty path", `{"ignore":["a",""]}`, match.Rules{}, "field ignore[1] is empty"},
		{"empty kind path", `{"ignore_by_kind":{"gemini":[" "]}}`, match.Rules{}, "field ignore_by_kind.gemini[0] is empty"},
		{"empty header", `{"headers":[""]}`, match.Rules{}, "field headers[0] is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := proxy.ParseRules("rules.json", []byte(tt.file))
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.err != "" && err == nil:
				t.Fatalf("no error, want one saying %q", tt.err)
			case tt.err != "":
				if !strings.HasPrefix(err.Error(), "rules file rules.json: ") || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("error %q, want one naming rules.json and saying %q", err, tt.err)
				}
				if !errors.Is(err, proxy.ErrConfig) {
					t.Errorf("error %v does not wrap ErrConfig", err)
				}
			case !reflect.DeepEqual(got, tt.want):
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLoadRulesMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.json")
	_, err := proxy.LoadRules(path)
	if err == nil || !strings.Contains(err.Error(), path) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("error %v, want one naming %s and wrapping ErrNotExist", err, path)
	}
}

func TestMergeRules(t *testing.T) {
	got := proxy.MergeRules(
		match.Rules{Ignore: []string{"a", "b"}, IgnoreByKind: map[string][]string{"gemini": {"x"}}, Headers: []string{"H"}},
		match.Rules{Ignore: []string{"b", "c"}, IgnoreByKind: map[string][]string{"gemini": {"x", "y"}, "ollama": {"z"}}, IgnoreQuery: []string{"q"}},
	)
	want := match.Rules{Ignore: []string{"a", "b", "c"}, IgnoreByKind: map[string][]string{"gemini": {"x", "y"}, "ollama": {"z"}},
		IgnoreQuery: []string{"q"}, Headers: []string{"H"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

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
	fileRules, err := proxy.LoadRules(rulesFile)
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
		{"merged with --ignore", proxy.MergeRules(fileRules, match.Rules{Ignore: []string{"messages"}}), "?api-version=1", "assistants=v2",
			strings.Replace(recorded, `"hi"`, `"hello"`, 1), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := cassette.NewRedactor(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			m, err := proxy.NewMatcher(tt.rules, r)
			if err != nil {
				t.Fatal(err)
			}
			rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.Matcher, c.Redactor = m, r })
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
