package scenario_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/llmproxy/llmproxy/scenario"
	"github.com/llmproxy/llmproxy/wire"
)

// newcomer is the scenario of a new user: a greeting, a weather round, a
// 429 met by the SDK's retry, and a stream cut short, each a test of its
// own that may run first, alone or in parallel with the others.
const newcomer = `
  - id: greet
    when: {latest-user: {contains: hello}}
    respond: {text: "Hello! How can I help?"}
    complete: true
  - id: weather
    start: true
    when: {latest-user: {contains: weather}}
    respond: {tool-calls: [{preset: weather, arguments: {location: Paris, unit: celsius}}]}
  - id: weather-answer
    when: {tool-result: {name: weather}}
    respond: {text: "Paris is sunny, 21 °C."}
    complete: true
  - id: busy
    start: true
    when: {latest-user: {contains: busy}}
    respond: {error: {status: 429, message: "Slow down", retry-after: 0s}}
  - id: after-retry
    respond: {text: "Done after a retry."}
    complete: true
  - id: story
    start: true
    when: {latest-user: {contains: story}}
    respond: {text: "Once upon a time there was a stream.", cut-after: 3}
    then: story-whole
  - id: story-whole
    respond: {text: "Once upon a time."}
    complete: true
`

// chatTurns builds an OpenAI chat body from alternating turns.
func assistant(text string) string {
	return `{"role":"assistant","content":` + quoteJSON(text) + `}`
}

// TestPositionReadFromTheRequest: sixteen conversations at once, no
// conversation named, interleaved: each request's history puts it where
// its conversation is, and the ids follow the path (run with -race).
func TestPositionReadFromTheRequest(t *testing.T) {
	e := steps(t, newcomer)
	const weatherArgs = `{"location":"Paris","unit":"celsius"}`
	callTurn := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_weather","type":"function","function":{"name":"weather","arguments":` + quoteJSON(weatherArgs) + `}}]}`
	resultTurn := `{"role":"tool","tool_call_id":"call_weather","content":` + quoteJSON(`{"location":"Paris","temperature":21,"unit":"celsius","condition":"sunny"}`) + `}`
	var start, mid sync.WaitGroup
	start.Add(16)
	mid.Add(16)
	errs := make(chan error, 64)
	var wg sync.WaitGroup
	for c := range 16 {
		wg.Go(func() {
			q := fmt.Sprintf("weather in Paris? (test %d)", c)
			if c%2 == 1 {
				q = fmt.Sprintf("hello from test %d", c)
			}
			start.Done()
			start.Wait()
			p, err := e.Answer(request(t, "", wire.KindOpenAIChat, chat(user(q))))
			if err != nil {
				errs <- err
				mid.Done()
				return
			}
			p.Commit()
			mid.Done()
			mid.Wait() // every conversation has its first answer: interleave
			if c%2 == 1 {
				if p.Step != "greet" || p.Answer.ID != "chatcmpl-entries-1" {
					errs <- fmt.Errorf("test %d: step %q id %q", c, p.Step, p.Answer.ID)
				}
				return
			}
			if p.Step != "weather" || p.Answer.ToolCalls[0].ID != "call_weather" {
				errs <- fmt.Errorf("test %d: step %q calls %+v", c, p.Step, p.Answer.ToolCalls)
				return
			}
			p, err = e.Answer(request(t, "", wire.KindOpenAIChat, chat(user(q), callTurn, resultTurn)))
			if err != nil {
				errs <- fmt.Errorf("test %d: %w", c, err)
				return
			}
			p.Commit()
			if p.Step != "weather-answer" || p.Answer.ID != "chatcmpl-entries-2" {
				errs <- fmt.Errorf("test %d: step %q id %q", c, p.Step, p.Answer.ID)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestSilentStepsAreKeptByRequest: an error or a cut stream leaves no trace
// in the next request, so the engine keeps it by the request's bytes: the
// SDK's retry meets the next step, the next request walks through the
// silent step (which the ids count), and a different request is not moved.
func TestSilentStepsAreKeptByRequest(t *testing.T) {
	e := steps(t, newcomer)
	busy := request(t, "", wire.KindOpenAIChat, chat(user("are you busy?")))
	for k, want := range []struct{ step, id string }{{"busy", "chatcmpl-entries-1"}, {"after-retry", "chatcmpl-entries-2"}, {"after-retry", "chatcmpl-entries-2"}} {
		d := answer(t, e, busy)
		if d.Step != want.step || d.Answer.ID != want.id {
			t.Errorf("request %d: step %q id %q, want %s %s", k+1, d.Step, d.Answer.ID, want.step, want.id)
		}
	}
	other := answer(t, e, request(t, "", wire.KindOpenAIChat, chat(user("busy, another test"))))
	if other.Step != "busy" {
		t.Errorf("a different request was moved by the first one's error: step %q", other.Step)
	}
	m := miss(t, e, request(t, "", wire.KindOpenAIChat, chat(user("are you busy?"), assistant("Done after a retry."), user("thanks"))))
	if !strings.Contains(m.Reason, `ended at step "after-retry"`) || !strings.Contains(m.Error(), `after step "after-retry", 2 answers`) {
		t.Errorf("after the retried answer: %v", m)
	}

	// A cut stream: not delivered whole, so its retry meets the next step.
	story := request(t, "", wire.KindOpenAIChat, chat(user("tell me a story")))
	if d := answer(t, e, story); d.Step != "story" || d.CutAfter != 3 {
		t.Errorf("story: step %q cut after %d", d.Step, d.CutAfter)
	}
	if d := answer(t, e, story); d.Step != "story-whole" || d.Answer.ID != "chatcmpl-entries-2" {
		t.Errorf("story again: step %q id %q", d.Step, d.Answer.ID)
	}
}

// TestNamedConversationOverrides: with a conversation named, the engine's
// own position counts, not the request's: the same request twice moves on.
func TestNamedConversationOverrides(t *testing.T) {
	e := steps(t, newcomer)
	if got, _ := say(t, e, "x", "hello"); got != "greet" {
		t.Fatalf("first: %q", got)
	}
	if _, err := say(t, e, "x", "hello"); !errors.Is(err, scenario.ErrMiss) {
		t.Errorf("the named conversation ended at greet, yet: %v", err)
	}
	// Without the name the same request is a conversation at its start.
	if got, err := say(t, e, "", "hello"); got != "greet" || err != nil {
		t.Errorf("unnamed: %q %v", got, err)
	}
}

// TestIndistinguishableRequestsMissSaysSo: a miss of a conversation read
// from the request says where the request put it; where the request's
// bytes met a kept position (another test sent the same request) or the
// conversation ended, it says that identical requests are one conversation
// unless named.
func TestIndistinguishableRequestsMissSaysSo(t *testing.T) {
	e := steps(t, `
  - id: busy
    when: {latest-user: {contains: busy}}
    respond: {error: {status: 429, message: "Slow down"}}
    then: answer
  - id: answer
    when: {latest-user: {contains: "busy, retried"}}
    respond: {text: "Done."}
    complete: true
`)
	plain := miss(t, e, request(t, "", wire.KindOpenAIChat, chat(user("nothing fits"))))
	if msg := plain.Error(); !strings.Contains(msg, "read from the request: at the start") || strings.Contains(msg, "X-Llmproxy-Conversation") {
		t.Errorf("a plain miss: %s", msg)
	}
	// Two tests send "busy": the first gets the 429, the second's identical
	// request goes on after it, where its condition fails.
	answer(t, e, request(t, "", wire.KindOpenAIChat, chat(user("busy"))))
	m := miss(t, e, request(t, "", wire.KindOpenAIChat, chat(user("busy"))))
	msg := m.Error()
	for _, want := range []string{`read from the request: after step "busy", 1 answer`, "these very bytes was answered before", "X-Llmproxy-Conversation"} {
		if !strings.Contains(msg, want) {
			t.Errorf("miss lacks %q: %s", want, msg)
		}
	}
	// Named, each test has its own.
	for _, name := range []string{"test-1", "test-2"} {
		p, err := e.Answer(request(t, name, wire.KindOpenAIChat, chat(user("busy"))))
		if err != nil || p.Step != "busy" {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestPreviousResponseID: Responses requests that continue an answer by its
// id alone find its conversation, in parallel, each on its own path.
func TestPreviousResponseID(t *testing.T) {
	e := steps(t, newcomer)
	var wg sync.WaitGroup
	for c := range 16 {
		wg.Go(func() {
			first := answer(t, e, request(t, "", wire.KindOpenAIResponses, fmt.Sprintf(`{"model":"m","input":"weather, test %d"}`, c)))
			if first.Step != "weather" || first.Answer.ID != "resp_entries-1" {
				t.Errorf("test %d: step %q id %q", c, first.Step, first.Answer.ID)
				return
			}
			body := `{"model":"m","previous_response_id":"resp_entries-1","input":[{"type":"function_call_output","call_id":"call_weather","output":"{\"temperature\":21}"}]}`
			second := answer(t, e, request(t, "", wire.KindOpenAIResponses, body))
			if second.Step != "weather-answer" || second.Answer.ID != "resp_entries-2" {
				t.Errorf("test %d: step %q id %q", c, second.Step, second.Answer.ID)
			}
		})
	}
	wg.Wait()
	_, err := e.Answer(request(t, "", wire.KindOpenAIResponses, `{"model":"m","previous_response_id":"resp_unknown","input":"x"}`))
	if !errors.Is(err, scenario.ErrMiss) || !strings.Contains(err.Error(), `previous_response_id "resp_unknown" names no answer`) {
		t.Errorf("an unknown previous_response_id: %v", err)
	}
}
