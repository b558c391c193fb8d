package scenario_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

// derivedBody is a request body of kind (OpenAI chat or Anthropic) with a
// first user text, then, when answered is set, the answer echoed back and
// a next user text; schema asks for structured output (Anthropic: a forced
// tool record_weather).
func derivedBody(kind wire.Kind, schema, first string, answered *wire.Answer, next string) string {
	msgs := []string{user(first)}
	if kind == wire.KindAnthropicMessages {
		if answered != nil {
			var blocks, results []string
			if answered.Text != "" {
				blocks = append(blocks, `{"type":"text","text":`+quoteJSON(answered.Text)+`}`)
			}
			for _, c := range answered.ToolCalls {
				blocks = append(blocks, `{"type":"tool_use","id":`+quoteJSON(c.ID)+`,"name":`+quoteJSON(c.Name)+`,"input":`+string(c.Arguments)+`}`)
				results = append(results, `{"type":"tool_result","tool_use_id":`+quoteJSON(c.ID)+`,"content":"recorded"}`)
			}
			msgs = append(msgs, `{"role":"assistant","content":[`+strings.Join(blocks, ",")+`]}`,
				`{"role":"user","content":[`+strings.Join(append(results, `{"type":"text","text":`+quoteJSON(next)+`}`), ",")+`]}`)
		}
		out := ""
		if schema != "" {
			out = `,"tools":[{"name":"record_weather","input_schema":` + schema + `}],"tool_choice":{"type":"tool","name":"record_weather"}`
		}
		return `{"model":"claude-x","max_tokens":99,"system":"Be brief.","messages":[` + strings.Join(msgs, ",") + `]` + out + `}`
	}
	if answered != nil {
		msgs = append(msgs, assistant(answered.Text), user(next))
	}
	out := ""
	if schema != "" {
		out = `,"response_format":{"type":"json_schema","json_schema":{"name":"w","strict":true,"schema":` + schema + `}}`
	}
	return `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Be brief."},` + strings.Join(msgs, ",") + `]` + out + `}`
}

// TestPositionThroughDerivedAnswers: a step whose answer is made from the
// request (a template, echo, summary, a json value or generate) is found
// by making its answer again from what preceded the echoed turn, so the
// next request, with no header, is answered by the step after it, not by
// the entry again; its ids count both answers.
func TestPositionThroughDerivedAnswers(t *testing.T) {
	cases := []struct {
		name, respond, schema, first string
	}{
		{"template", `{text: {template: "Hi {{capture.name}}, this is {{model}}. {{system}}"}}`, "", "my name is Ada"},
		{"echo", `{text: {echo: true}}`, "", "Repeat   after me,\n please"},
		{"summary", `{text: {summary: {sentences: 1, max-chars: 30}}}`, "", "The first sentence is long enough to be cut. The second is not kept."},
		{"json", `{json: {city: Paris, temperature: 21.5, unit: celsius, when: "2024-01-01"}}`, weatherSchema, "Weather?"},
		{"generate", `{json: {generate: true}}`, weatherSchema, "Weather?"},
	}
	for _, kind := range []wire.Kind{wire.KindOpenAIChat, wire.KindAnthropicMessages} {
		for _, tc := range cases {
			t.Run(string(kind)+"/"+tc.name, func(t *testing.T) {
				e := steps(t, `
  - id: first
    when: {latest-user: {matches: "(?s)(my name is (?P<name>\\w+))?.*"}}
    respond: `+tc.respond+`
    then: second
  - id: second
    respond: {text: "The second step."}
    complete: true
`)
				d := answer(t, e, request(t, "", kind, derivedBody(kind, tc.schema, tc.first, nil, "")))
				if d.Step != "first" || (d.Answer.Text == "" && len(d.Answer.ToolCalls) == 0) {
					t.Fatalf("first answer: step %q %+v", d.Step, d.Answer)
				}
				d2 := answer(t, e, request(t, "", kind, derivedBody(kind, tc.schema, tc.first, &d.Answer, "And then?")))
				if d2.Step != "second" || !strings.HasSuffix(d2.Answer.ID, "entries-2") {
					t.Errorf("second request after %q: step %q id %q, want second, entries-2", d.Answer.Text, d2.Step, d2.Answer.ID)
				}
			})
		}
	}
}

// TestDerivedAnswersParallel: sixteen conversations at once, no header,
// each with its own name through one of two template steps: each request
// is placed after the template step its history shows, with the answer
// made from its own user text, so each conversation gets its own path.
func TestDerivedAnswersParallel(t *testing.T) {
	e := steps(t, `
  - id: casual
    start: true
    when: {latest-user: {matches: "^my name is (\\w+)"}}
    respond: {text: {template: "Hi {{capture.1}}!"}}
    then: casual-next
  - id: casual-next
    respond: {text: {template: "Casual again: {{latest_user}}"}}
    complete: true
  - id: formal
    start: true
    when: {latest-user: {matches: "^I am (\\w+)"}}
    respond: {text: {template: "Good day, {{capture.1}}."}}
    then: formal-next
  - id: formal-next
    respond: {text: "Formal again."}
    complete: true
`)
	var wg sync.WaitGroup
	var ready sync.WaitGroup
	ready.Add(16)
	errs := make(chan error, 32)
	for c := range 16 {
		wg.Go(func() {
			first, want := fmt.Sprintf("my name is N%d", c), []string{"casual", "casual-next"}
			if c%2 == 1 {
				first, want = fmt.Sprintf("I am N%d", c), []string{"formal", "formal-next"}
			}
			p, err := e.Answer(request(t, "", wire.KindOpenAIChat, derivedBody(wire.KindOpenAIChat, "", first, nil, "")))
			ready.Done()
			if err != nil {
				errs <- err
				return
			}
			p.Commit()
			ready.Wait() // interleave: every conversation has had its first answer
			if p.Step != want[0] || !strings.Contains(p.Answer.Text, fmt.Sprintf("N%d", c)) {
				errs <- fmt.Errorf("conversation %d: step %q text %q", c, p.Step, p.Answer.Text)
				return
			}
			p2, err := e.Answer(request(t, "", wire.KindOpenAIChat, derivedBody(wire.KindOpenAIChat, "", first, &p.Answer, "again")))
			if err != nil {
				errs <- fmt.Errorf("conversation %d: %w", c, err)
				return
			}
			p2.Commit()
			if p2.Step != want[1] || p2.Answer.ID != "chatcmpl-entries-2" {
				errs <- fmt.Errorf("conversation %d: second step %q id %q, want %s", c, p2.Step, p2.Answer.ID, want[1])
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestDerivedAnswerOfAnotherRequest: an echoed turn a template step would
// not have written from the user text before it (another conversation's
// answer pasted in) does not place the request after that step.
func TestDerivedAnswerOfAnotherRequest(t *testing.T) {
	e := steps(t, `
  - id: greet
    when: {latest-user: {matches: "^my name is (\\w+)"}}
    respond: {text: {template: "Hi {{capture.1}}!"}}
    then: next
  - id: next
    respond: {text: "Next."}
    complete: true
`)
	forged := &wire.Answer{Text: "Hi Bob!"}
	m := miss(t, e, request(t, "", wire.KindOpenAIChat, derivedBody(wire.KindOpenAIChat, "", "my name is Ada", forged, "and?")))
	if !strings.Contains(m.Error(), "at the start") {
		t.Errorf("miss %q does not name the start", m)
	}
}
