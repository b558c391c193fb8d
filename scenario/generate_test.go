package scenario_test

import (
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/scenario"
	"github.com/llmproxy/llmproxy/wire"
)

// TestTextGenerators: each generator derives its text from the request, the
// same text for the same request.
func TestTextGenerators(t *testing.T) {
	const long = "  The proxy answers.   It never calls a provider!\nDoes it record? Yes, it does. A fifth sentence."
	tests := []struct {
		name, when, text, ask, want string
	}{
		{"template with captures", `{latest-user: {matches: "weather in (\\w+) on (?P<day>\\w+)"}}`,
			`{template: "{{capture.1}} on {{ capture.day }} ({{capture.0}}), asked of {{model}}"}`,
			"What's the weather in Paris on Monday?", "Paris on Monday (weather in Paris on Monday), asked of gpt-4o-mini"},
		{"template with request fields", "", `{template: "You said: {{latest_user}} / {{system}}"}`,
			"hello", "You said: hello / Be brief."},
		{"template without fields", "", `{template: "plain } { text"}`, "x", "plain } { text"},
		{"capture that took no part", `{latest-user: {matches: "a(b)?c"}}`, `{template: "[{{capture.1}}]"}`, "ac", "[]"},
		{"echo", "", `{echo: true}`, "Repeat after me: ünïcode ✓", "Repeat after me: ünïcode ✓"},
		{"summary by sentences", "", `{summary: {sentences: 2}}`, long, "The proxy answers. It never calls a provider!"},
		{"summary by characters", "", `{summary: {max-chars: 30}}`, long, "The proxy answers. It never…"},
		{"summary by both", "", `{summary: {sentences: 3, max-chars: 200}}`, long, "The proxy answers. It never calls a provider! Does it record?"},
		{"summary of a short text", "", `{summary: {max-chars: 50}}`, "Short.", "Short."},
		{"summary of one long word", "", `{summary: {max-chars: 5}}`, "Supercalifragilistic", "Supe…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := "steps:\n  - respond: {text: " + tt.text + "}\n"
			if tt.when != "" {
				file = "steps:\n  - when: " + tt.when + "\n    respond: {text: " + tt.text + "}\n"
			}
			s, err := scenario.Parse("gen.yaml", []byte("on-exhausted: repeat-last\n"+file))
			e := mustEngine(t, s, err)
			body := chat(`{"role":"system","content":"Be brief."}`, user(tt.ask))
			for range 2 { // the second answer (repeat-last) is the same
				got := answer(t, e, request(t, "", wire.KindOpenAIChat, body))
				if got.Answer.Text != tt.want {
					t.Fatalf("text %q, want %q", got.Answer.Text, tt.want)
				}
			}
		})
	}
}

// TestTextGeneratorsOnEveryWire: the latest user text and the model are
// read from each wire.
func TestTextGeneratorsOnEveryWire(t *testing.T) {
	b := scenario.New("echo").OnExhausted(scenario.RepeatLast)
	b.Step("").TextFrom(scenario.TextFrom{Template: "{{model}}: {{latest_user}}"})
	e := build(t, b)
	bodies := map[wire.Kind]string{
		wire.KindOpenAIChat:        `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		wire.KindOpenAIResponses:   `{"model":"m","input":"hi"}`,
		wire.KindAnthropicMessages: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
		wire.KindOllama:            `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		wire.KindGemini:            `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
	}
	for kind, body := range bodies {
		want := "m: hi"
		if kind == wire.KindGemini {
			want = "gemini-2.0-flash: hi" // the model is in the path
		}
		if got := answer(t, e, request(t, string(kind), kind, body)).Answer.Text; got != want {
			t.Errorf("%s: text %q, want %q", kind, got, want)
		}
	}
}

// TestTextGeneratorChecks: check reports a template naming an unknown
// field, a capture the regular expression does not have, and generators
// used wrongly, each at its line.
func TestTextGeneratorChecks(t *testing.T) {
	tests := []struct{ name, step, want string }{
		{"unknown field", `{respond: {text: {template: "hi {{user}}"}}}`,
			`g.yaml:2: step "step-1": respond.text.template: {{user}} is not a field: a template has {{latest_user}}, {{model}}, {{system}} and {{capture.N}}`},
		{"capture out of range", `{when: {latest-user: {matches: "in (\\w+)"}}, respond: {text: {template: "{{capture.2}}"}}}`,
			`g.yaml:2: step "step-1": respond.text.template: {{capture.2}}: the latest-user regular expression has no group "2" (it has 1 group(s))`},
		{"named capture missing", `{when: {latest-user: {matches: "in (?P<city>\\w+)"}}, respond: {text: {template: "{{capture.town}}"}}}`,
			`has no group "town" (it has 1 group(s), named city)`},
		{"capture without matches", `{when: {latest-user: {contains: "x"}}, respond: {text: {template: "{{capture.1}}"}}}`,
			`{{capture.1}}: captures come from a latest-user matches condition, and this step has none`},
		{"unclosed field", `{respond: {text: {template: "hi {{model"}}}`, `"{{model" opens a field that no }} closes`},
		{"two generators", `{respond: {text: {echo: true, summary: {sentences: 1}}}}`, "a text generator has exactly one of template, echo or summary"},
		{"echo false", `{respond: {text: {echo: false}}}`, "respond.text.echo: echo is true"},
		{"empty summary", `{respond: {text: {summary: {}}}}`, "respond.text.summary: a summary needs max-chars, sentences or both"},
		{"zero sentences", `{respond: {text: {summary: {sentences: 0}}}}`, "respond.text.summary.sentences: must be >= 1, got 0"},
		{"unknown generator", `{respond: {text: {shout: true}}}`, `unknown key "shout"`},
		{"generator outside text", `{respond: {echo: true}}`, `g.yaml:2: step "step-1": respond: unknown key "echo" (a text generator goes under text: text: {echo: true})`},
		{"generator with an error", `{respond: {text: {echo: true}, error: {status: 500, message: x}}}`, "an error answer has nothing else in respond"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scenario.Parse("g.yaml", []byte("steps:\n  - "+tt.step+"\n"))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
	b := scenario.New("both")
	b.Step("").Text("fixed").TextFrom(scenario.TextFrom{Echo: true})
	if _, err := b.Build(); err == nil || !strings.Contains(err.Error(), "a text or a text generator, not both") {
		t.Errorf("text and generator: %v", err)
	}
}
