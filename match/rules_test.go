package match_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/match"
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
			got, err := match.ParseRules("rules.json", []byte(tt.file))
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.err != "" && err == nil:
				t.Fatalf("no error, want one saying %q", tt.err)
			case tt.err != "":
				if !strings.HasPrefix(err.Error(), "rules file rules.json: ") || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("error %q, want one naming rules.json and saying %q", err, tt.err)
				}
				if !errors.Is(err, match.ErrBadRule) {
					t.Errorf("error %v does not wrap ErrBadRule", err)
				}
			case !reflect.DeepEqual(got, tt.want):
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLoadRulesMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.json")
	_, err := match.LoadRules(path)
	if err == nil || !strings.Contains(err.Error(), path) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("error %v, want one naming %s and wrapping ErrNotExist", err, path)
	}
}

func TestMergeRules(t *testing.T) {
	got := match.MergeRules(
		match.Rules{Ignore: []string{"a", "b"}, IgnoreByKind: map[string][]string{"gemini": {"x"}}, Headers: []string{"H"}},
		match.Rules{Ignore: []string{"b", "c"}, IgnoreByKind: map[string][]string{"gemini": {"x", "y"}, "ollama": {"z"}}, IgnoreQuery: []string{"q"}},
	)
	want := match.Rules{Ignore: []string{"a", "b", "c"}, IgnoreByKind: map[string][]string{"gemini": {"x", "y"}, "ollama": {"z"}},
		IgnoreQuery: []string{"q"}, Headers: []string{"H"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
