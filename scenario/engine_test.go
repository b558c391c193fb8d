package scenario_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/scenario"
	"github.com/llmproxy/llmproxy/wire"
)

const (
	parisQuestion = "What's the weather in Paris?"
	parisArgs     = `{"location":"Paris","unit":"celsius"}`
	parisResult   = `{"location":"Paris","temperature":21,"unit":"celsius","condition":"sunny"}`
)

// weatherRounds are the two requests of the weather round on each wire: the
// question, then the question with the call and its result, each written
// the way that wire's clients write them.
var weatherRounds = []struct {
	kind     wire.Kind
	ask      string
	answer   string
	after    string // the answer request, then the step's answer and one more question
	idPrefix string
}{
	{
		kind:     wire.KindOpenAIChat,
		ask:      chat(user(parisQuestion)),
		idPrefix: "chatcmpl-",
		// The result is re-encoded by the client: other key order, spaces,
		// 21.0 for 21.
		answer: chat(user(parisQuestion),
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_paris","type":"function","function":{"name":"weather","arguments":`+quoteJSON(parisArgs)+`}}]}`,
			`{"role":"tool","tool_call_id":"call_paris","content":`+quoteJSON(`{"unit": "celsius", "location": "Paris", "temperature": 21.0, "condition": "sunny"}`)+`}`),
		after: chat(user(parisQuestion),
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_paris","type":"function","function":{"name":"weather","arguments":`+quoteJSON(parisArgs)+`}}]}`,
			`{"role":"tool","tool_call_id":"call_paris","content":`+quoteJSON(parisResult)+`}`,
			`{"role":"assistant","content":"Paris is sunny, 21 °C."}`, user("Thanks")),
	},
	{
		kind:     wire.KindOpenAIResponses,
		ask:      `{"model":"gpt-4o-mini","input":` + quoteJSON(parisQuestion) + `}`,
		idPrefix: "resp_",
		// previous_response_id: the call is named only by its id.
		answer: `{"model":"gpt-4o-mini","previous_response_id":"resp_weather-1","input":[{"type":"function_call_output","call_id":"call_paris","output":` + quoteJSON(parisResult) + `}]}`,
		after:  `{"model":"gpt-4o-mini","previous_response_id":"resp_weather-2","input":"Thanks"}`,
	},
	{
		kind:     wire.KindAnthropicMessages,
		ask:      `{"model":"claude-sonnet-4-6","max_tokens":512,"messages":[` + user(parisQuestion) + `]}`,
		idPrefix: "msg_",
		answer: `{"model":"claude-sonnet-4-6","max_tokens":512,"messages":[` + user(parisQuestion) + `,
			{"role":"assistant","content":[{"type":"tool_use","id":"call_paris","name":"weather","input":` + parisArgs + `}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_paris","content":[{"type":"text","text":` + quoteJSON(parisResult) + `}]}]}]}`,
		after: `{"model":"claude-sonnet-4-6","max_tokens":512,"messages":[` + user(parisQuestion) + `,
			{"role":"assistant","content":[{"type":"tool_use","id":"call_paris","name":"weather","input":` + parisArgs + `}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_paris","content":` + quoteJSON(parisResult) + `}]},
			{"role":"assistant","content":[{"type":"text","text":"Paris is sunny, 21 °C."}]},` + user("Thanks") + `]}`,
	},
	{
		kind: wire.KindGemini,
		ask:  `{"contents":[{"role":"user","parts":[{"text":` + quoteJSON(parisQuestion) + `}]}]}`,
		// No call ids: the result pairs with the call by name.
		answer: `{"contents":[{"role":"user","parts":[{"text":` + quoteJSON(parisQuestion) + `}]},
			{"role":"model","parts":[{"functionCall":{"name":"weather","args":` + parisArgs + `}}]},
			{"role":"user","parts":[{"functionResponse":{"name":"weather","response":` + parisResult + `}}]}]}`,
		// A streamed answer echoed as its pieces.
		after: `{"contents":[{"role":"user","parts":[{"text":` + quoteJSON(parisQuestion) + `}]},
			{"role":"model","parts":[{"functionCall":{"name":"weather","args":` + parisArgs + `}}]},
			{"role":"user","parts":[{"functionResponse":{"name":"weather","response":` + parisResult + `}}]},
			{"role":"model","parts":[{"text":"Paris is"},{"text":" sunny, 21 °C."}]},
			{"role":"user","parts":[{"text":"Thanks"}]}]}`,
	},
	{
		kind: wire.KindOllama,
		ask:  `{"model":"llama3.2","messages":[` + user(parisQuestion) + `]}`,
		answer: `{"model":"llama3.2","messages":[` + user(parisQuestion) + `,
			{"role":"assistant","content":"","tool_calls":[{"function":{"name":"weather","arguments":` + parisArgs + `}}]},
			{"role":"tool","tool_name":"weather","content":` + quoteJSON(parisResult) + `}]}`,
		after: `{"model":"llama3.2","messages":[` + user(parisQuestion) + `,
			{"role":"assistant","content":"","tool_calls":[{"function":{"name":"weather","arguments":` + parisArgs + `}}]},
			{"role":"tool","tool_name":"weather","content":` + quoteJSON(parisResult) + `},
			{"role":"assistant","content":"Paris is sunny, 21 °C."},` + user("Thanks") + `]}`,
	},
}

func weatherEngine(t testing.TB) *scenario.Engine {
	t.Helper()
	s, err := scenario.Load("testdata/valid/weather.yaml")
	return mustEngine(t, s, err)
}

func TestWeatherRoundOnEveryWire(t *testing.T) {
	for _, round := range weatherRounds {
		t.Run(string(round.kind), func(t *testing.T) {
			e := weatherEngine(t)
			first := answer(t, e, request(t, "", round.kind, round.ask))
			if first.Step != "ask" || !strings.HasPrefix(first.Conversation, "auto-") || first.Scenario != "weather" {
				t.Errorf("answered by %s/%s/%s, want weather/auto-…/ask", first.Scenario, first.Conversation, first.Step)
			}
			calls := first.Answer.ToolCalls
			if len(calls) != 1 || calls[0].ID != "call_paris" || calls[0].Name != "weather" || string(calls[0].Arguments) != parisArgs {
				t.Errorf("tool calls = %+v", calls)
			}
			if first.Answer.Finish != wire.FinishToolCalls || first.Delay != 20*time.Millisecond {
				t.Errorf("finish %q, delay %v; want tool-calls, 20ms", first.Answer.Finish, first.Delay)
			}
			if want := round.idPrefix + "weather-1"; first.Answer.ID != want {
				t.Errorf("id = %q, want %q", first.Answer.ID, want)
			}
			if len(first.Fixtures) != 1 || first.Fixtures[0].Call.ID != "call_paris" || string(first.Fixtures[0].Result.Content) != `{"condition":"sunny","location":"Paris","temperature":21,"unit":"celsius"}` {
				t.Errorf("fixtures = %+v", first.Fixtures)
			}

			second := answer(t, e, request(t, "", round.kind, round.answer))
			if second.Step != "answer" || second.Answer.Text != "Paris is sunny, 21 °C." || second.Answer.Finish != wire.FinishStop {
				t.Errorf("second answer: step %q text %q finish %q", second.Step, second.Answer.Text, second.Answer.Finish)
			}
			if want := round.idPrefix + "weather-2"; second.Answer.ID != want {
				t.Errorf("id = %q, want %q", second.Answer.ID, want)
			}

			// The same request again stands where it stood; one that goes on
			// after the complete step meets on-exhausted.
			if again := answer(t, e, request(t, "", round.kind, round.answer)); again.Step != "answer" || again.Answer.ID != second.Answer.ID {
				t.Errorf("the second request again: step %q id %q", again.Step, again.Answer.ID)
			}
			m := miss(t, e, request(t, "", round.kind, round.after))
			if !strings.Contains(m.Reason, `ended at step "answer"`) {
				t.Errorf("after the complete step: %v", m)
			}
		})
	}
}

// TestChangedToolResultMisses: a result that differs is a miss naming the
// step and the condition, and changes nothing; the right result then gets
// its answer.
func TestChangedToolResultMisses(t *testing.T) {
	e := weatherEngine(t)
	answer(t, e, request(t, "", wire.KindOpenAIChat, weatherRounds[0].ask))
	changed := strings.Replace(weatherRounds[0].answer, "21.0", "20", 1)
	m := miss(t, e, request(t, "", wire.KindOpenAIChat, changed))
	if len(m.Candidates) != 1 {
		t.Fatalf("candidates = %+v", m.Candidates)
	}
	c := m.Candidates[0]
	if c.Step != "answer" || c.Condition != "tool-result.result" || !strings.Contains(c.Had, `"temperature":20`) || !strings.Contains(c.Wants, `"temperature":21`) {
		t.Errorf("candidate miss = %+v", c)
	}
	msg := m.Error()
	for _, want := range []string{"scenario weather", `conversation "auto-`, `read from the request: after step "ask", 1 answer`, `step "answer"`, "tool-result.result"} {
		if !strings.Contains(msg, want) {
			t.Errorf("miss message lacks %q: %s", want, msg)
		}
	}
	if d := answer(t, e, request(t, "", wire.KindOpenAIChat, weatherRounds[0].answer)); d.Step != "answer" || d.Answer.ID != "chatcmpl-weather-2" {
		t.Errorf("after the miss: step %q id %q", d.Step, d.Answer.ID)
	}
}

// TestUncommittedAnswerConsumesNothing: an answer never delivered leaves
// the conversation where it was, ids included.
func TestUncommittedAnswerConsumesNothing(t *testing.T) {
	e := weatherEngine(t)
	ask := request(t, "c", wire.KindOpenAIChat, weatherRounds[0].ask)
	for range 3 {
		p, err := e.Answer(ask)
		if err != nil {
			t.Fatal(err)
		}
		if p.Step != "ask" || p.Answer.ID != "chatcmpl-weather-1" {
			t.Fatalf("uncommitted retry: step %q id %q", p.Step, p.Answer.ID)
		}
	}
	if got := e.Unused(); len(got) != 2 {
		t.Errorf("unused = %q, want both steps", got)
	}
	p, _ := e.Answer(ask)
	p.Commit()
	p.Commit() // a second commit counts nothing
	if d := answer(t, e, request(t, "c", wire.KindOpenAIChat, weatherRounds[0].answer)); d.Answer.ID != "chatcmpl-weather-2" {
		t.Errorf("id after one commit = %q", d.Answer.ID)
	}
	if got := e.Unused(); len(got) != 0 {
		t.Errorf("unused = %q, want none", got)
	}
}

func TestConditions(t *testing.T) {
	toolRound := func(result string) string {
		return chat(user(parisQuestion),
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"q\": \"a\", \"n\": 1}"}}]}`,
			`{"role":"tool","tool_call_id":"call_1","content":`+quoteJSON(result)+`}`)
	}
	anthropic := func(system string, msgs ...string) string {
		return `{"model":"claude","max_tokens":10,"system":` + quoteJSON(system) + `,"messages":[` + strings.Join(msgs, ",") + `]}`
	}
	tests := []struct {
		name string
		when func(*scenario.StepBuilder)
		kind wire.Kind
		body string
		// cond is the failing condition, "" when the step answers.
		cond, had, wants string
	}{
		{name: "latest-user equals", when: func(s *scenario.StepBuilder) { s.WhenLatestUser(scenario.Equals("hi")) },
			body: chat(user("bye"), `{"role":"assistant","content":"x"}`, user("hi"))},
		{name: "latest-user equals fails", when: func(s *scenario.StepBuilder) { s.WhenLatestUser(scenario.Equals("hi")) },
			body: chat(user("hi"), `{"role":"assistant","content":"x"}`, user("bye")), cond: "latest-user", had: `"bye"`, wants: `equals "hi"`},
		{name: "latest-user contains", when: func(s *scenario.StepBuilder) { s.WhenLatestUser(scenario.Contains("Paris")) },
			body: chat(user(parisQuestion))},
		{name: "latest-user contains fails", when: func(s *scenario.StepBuilder) { s.WhenLatestUser(scenario.Contains("Lyon")) },
			body: chat(user(parisQuestion)), cond: "latest-user", wants: `contains "Lyon"`},
		{name: "latest-user matches", when: func(s *scenario.StepBuilder) { s.WhenLatestUser(scenario.Matches(`(?i)^what.*paris\?$`)) },
			body: chat(user(parisQuestion))},
		{name: "latest-user matches fails", when: func(s *scenario.StepBuilder) { s.WhenLatestUser(scenario.Matches(`^Lyon`)) },
			body: chat(user(parisQuestion)), cond: "latest-user", wants: `matches "^Lyon"`},
		{name: "latest-user absent", when: func(s *scenario.StepBuilder) { s.WhenLatestUser(scenario.Equals("")) },
			body: chat(`{"role":"system","content":"s"}`), cond: "latest-user", had: "no user text"},
		{name: "latest-user skips a turn of tool results", when: func(s *scenario.StepBuilder) { s.WhenLatestUser(scenario.Equals("q")) },
			kind: wire.KindAnthropicMessages,
			body: anthropic("s", user("q"), `{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}`,
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"1"}]}`)},
		{name: "latest-user parts joined", when: func(s *scenario.StepBuilder) { s.WhenLatestUser(scenario.Equals("a\nb")) },
			body: chat(`{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`)},
		{name: "system", when: func(s *scenario.StepBuilder) { s.WhenSystem(scenario.Contains("pirate")) },
			kind: wire.KindAnthropicMessages, body: anthropic("Talk like a pirate.", user("q"))},
		{name: "system fails", when: func(s *scenario.StepBuilder) { s.WhenSystem(scenario.Contains("pirate")) },
			kind: wire.KindAnthropicMessages, body: anthropic("Be formal.", user("q")), cond: "system", had: `"Be formal."`},
		{name: "tool-result by name, arguments and result as JSON values",
			when: func(s *scenario.StepBuilder) {
				s.WhenToolResult("lookup", "call_1", map[string]any{"n": 1.0, "q": "a"}, map[string]any{"hits": []int{1, 2}})
			},
			body: toolRound(`{"hits": [1, 2.0]}`)},
		{name: "tool-result name fails", when: func(s *scenario.StepBuilder) { s.WhenToolResult("search", "", nil, nil) },
			body: toolRound(`1`), cond: "tool-result.name", had: `a result for "lookup"`, wants: `a result for "search"`},
		{name: "tool-result id fails", when: func(s *scenario.StepBuilder) { s.WhenToolResult("lookup", "call_2", nil, nil) },
			body: toolRound(`1`), cond: "tool-result.id", had: "a result for call_1", wants: "call_2"},
		{name: "tool-result arguments fail", when: func(s *scenario.StepBuilder) { s.WhenToolResult("lookup", "", map[string]any{"q": "b", "n": 1}, nil) },
			body: toolRound(`1`), cond: "tool-result.arguments", had: `{"q":"a","n":1} for call call_1`, wants: `{"n":1,"q":"b"}`},
		{name: "tool-result result fails", when: func(s *scenario.StepBuilder) { s.WhenToolResult("lookup", "", nil, []int{1}) },
			body: toolRound(`[2]`), cond: "tool-result.result", had: "[2] for call call_1", wants: "[1]"},
		{name: "tool-result plain text result", when: func(s *scenario.StepBuilder) { s.WhenToolResult("lookup", "", nil, "sunny") },
			body: toolRound(`sunny`)},
		{name: "tool-result none sent", when: func(s *scenario.StepBuilder) { s.WhenToolResult("lookup", "", nil, nil) },
			body: chat(user("q")), cond: "tool-result", had: "no tool result after the last assistant turn"},
		{name: "tool-result answered before the last assistant turn is not latest", when: func(s *scenario.StepBuilder) { s.WhenToolResult("lookup", "", nil, nil) },
			body: strings.TrimSuffix(toolRound("1"), "]}") + `,{"role":"assistant","content":"done"},` + user("again") + `]}`,
			cond: "tool-result", had: "no tool result after the last assistant turn"},
		{name: "model", when: func(s *scenario.StepBuilder) { s.WhenModel("gpt-4o-mini") }, body: chat(user("q"))},
		{name: "model fails", when: func(s *scenario.StepBuilder) { s.WhenModel("gpt-5") }, body: chat(user("q")),
			cond: "model", had: `"gpt-4o-mini"`, wants: `"gpt-5"`},
		{name: "api", when: func(s *scenario.StepBuilder) { s.WhenAPI(wire.KindOpenAIChat) }, body: chat(user("q"))},
		{name: "api fails", when: func(s *scenario.StepBuilder) { s.WhenAPI(wire.KindGemini) }, body: chat(user("q")),
			cond: "api", had: "openai-chat", wants: "gemini"},
		{name: "tools-offered", when: func(s *scenario.StepBuilder) { s.WhenToolsOffered("weather") },
			body: `{"model":"m","messages":[` + user("q") + `],"tools":[{"type":"function","function":{"name":"shell"}},{"type":"function","function":{"name":"weather"}}]}`},
		{name: "tools-offered fails", when: func(s *scenario.StepBuilder) { s.WhenToolsOffered("weather", "shell") },
			body: `{"model":"m","messages":[` + user("q") + `],"tools":[{"type":"function","function":{"name":"weather"}}]}`,
			cond: "tools-offered", had: "tools weather", wants: `tool "shell"`},
		{name: "json", when: func(s *scenario.StepBuilder) { s.WhenJSON("temperature", 0.5) },
			body: `{"model":"m","temperature":5e-1,"messages":[` + user("q") + `]}`},
		{name: "json fails", when: func(s *scenario.StepBuilder) { s.WhenJSON("metadata.run", "a") },
			body: chat(user("q")), cond: "json metadata.run", had: "nothing", wants: `"a"`},
		{name: "all must hold: the first failing one is named",
			when: func(s *scenario.StepBuilder) {
				s.WhenLatestUser(scenario.Equals("q")).WhenModel("other").WhenAPI(wire.KindGemini)
			},
			body: chat(user("q")), cond: "model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind := tt.kind
			if kind == "" {
				kind = wire.KindOpenAIChat
			}
			b := scenario.New("cond")
			tt.when(b.Step("only").Text("ok"))
			e := build(t, b)
			req := request(t, "", kind, tt.body)
			if tt.cond == "" {
				if d := answer(t, e, req); d.Step != "only" {
					t.Errorf("answered by %q", d.Step)
				}
				return
			}
			m := miss(t, e, req)
			if len(m.Candidates) != 1 {
				t.Fatalf("candidates = %+v", m.Candidates)
			}
			c := m.Candidates[0]
			if c.Step != "only" || c.Condition != tt.cond || !strings.Contains(c.Had, tt.had) || !strings.Contains(c.Wants, tt.wants) {
				t.Errorf("miss = %+v\nwant condition %q, had ⊇ %q, wants ⊇ %q", c, tt.cond, tt.had, tt.wants)
			}
		})
	}
}

// TestMissShortensValues: what a miss shows of a long value is cut.
func TestMissShortensValues(t *testing.T) {
	b := scenario.New("long")
	b.Step("only").WhenLatestUser(scenario.Equals(strings.Repeat("w", 500))).Text("ok")
	e := build(t, b)
	m := miss(t, e, request(t, "", wire.KindOpenAIChat, chat(user(strings.Repeat("h", 500)))))
	c := m.Candidates[0]
	if n := len([]rune(c.Had)); n > 130 || !strings.HasSuffix(c.Had, `…"`) {
		t.Errorf("had is %d characters: %s", n, c.Had)
	}
	if n := len([]rune(c.Wants)); n > 140 {
		t.Errorf("wants is %d characters", n)
	}
}

// graph is a scenario with branches: a greeting, then weather or time, each
// back to a menu, and a goodbye that completes.
func graph(t testing.TB, exhausted scenario.Exhausted, maxSteps int) *scenario.Engine {
	b := scenario.New("graph").OnExhausted(exhausted).MaxSteps(maxSteps)
	b.Step("hello").WhenLatestUser(scenario.Equals("hello")).Text("Hi! Weather or time?").Then("weather", "time", "bye")
	b.Step("weather").WhenLatestUser(scenario.Contains("weather")).Text("Sunny.").Then("menu")
	b.Step("time").WhenLatestUser(scenario.Contains("time")).Text("Noon.").Then("menu")
	b.Step("menu").WhenLatestUser(scenario.Equals("more")).Text("Weather or time?").Then("weather", "time", "bye")
	b.Step("bye").WhenLatestUser(scenario.Equals("bye")).Text("Bye.").Complete()
	return build(t, b)
}

func say(t testing.TB, e *scenario.Engine, conv, text string) (string, error) {
	t.Helper()
	p, err := e.Answer(request(t, conv, wire.KindOpenAIChat, chat(user(text))))
	if err != nil {
		return "", err
	}
	p.Commit()
	return p.Step, nil
}

func TestCandidatesAndThenLists(t *testing.T) {
	e := graph(t, scenario.Reject, 0)
	for _, turn := range []struct{ say, step string }{
		{"hello", "hello"}, {"the time please", "time"}, {"more", "menu"},
		{"weather?", "weather"}, {"more", "menu"}, {"bye", "bye"},
	} {
		got, err := say(t, e, "c", turn.say)
		if err != nil || got != turn.step {
			t.Fatalf("%q answered by %q (%v), want %q", turn.say, got, err, turn.step)
		}
	}
	// Every candidate is named in a miss, each with its failing condition.
	e = graph(t, scenario.Reject, 0)
	say(t, e, "c", "hello")
	_, err := say(t, e, "c", "pizza")
	var m *scenario.Miss
	if !errors.As(err, &m) {
		t.Fatalf("err = %v", err)
	}
	var steps []string
	for _, c := range m.Candidates {
		steps = append(steps, c.Step+":"+c.Condition)
	}
	if got := strings.Join(steps, " "); got != "weather:latest-user time:latest-user bye:latest-user" {
		t.Errorf("candidates = %s", got)
	}
	// The first step is the only candidate at the start.
	_, err = say(t, graph(t, scenario.Reject, 0), "c", "weather")
	if !errors.As(err, &m) || len(m.Candidates) != 1 || m.Candidates[0].Step != "hello" {
		t.Errorf("at the start: %v", err)
	}
}

func TestDefaultThenIsTheNextStep(t *testing.T) {
	b := scenario.New("linear")
	b.Step("").Text("one")
	b.Step("").Text("two")
	b.Step("").Text("three")
	e := build(t, b)
	for _, want := range []string{"step-1", "step-2", "step-3"} {
		if got, err := say(t, e, "c", "x"); got != want || err != nil {
			t.Fatalf("got %q (%v), want %q", got, err, want)
		}
	}
	if _, err := say(t, e, "c", "x"); !errors.Is(err, scenario.ErrMiss) {
		t.Errorf("after the last step: %v", err)
	}
}

func TestOnExhausted(t *testing.T) {
	tests := []struct {
		exhausted scenario.Exhausted
		after     string // what answers "bye" said again, or "" for a miss
		then      string // what answers "hello" next
	}{
		{scenario.Reject, "", ""},
		{scenario.RepeatLast, "bye", "bye"},
		{scenario.Restart, "", "hello"},
	}
	for _, tt := range tests {
		t.Run(string(tt.exhausted), func(t *testing.T) {
			e := graph(t, tt.exhausted, 0)
			say(t, e, "c", "hello")
			if got, err := say(t, e, "c", "bye"); got != "bye" {
				t.Fatalf("bye answered by %q (%v)", got, err)
			}
			got, err := say(t, e, "c", "bye")
			if got != tt.after || (tt.after == "") != errors.Is(err, scenario.ErrMiss) {
				t.Errorf("bye again: %q, %v; want %q", got, err, tt.after)
			}
			if got, _ := say(t, e, "c", "hello"); got != tt.then {
				t.Errorf("hello after the end: %q, want %q", got, tt.then)
			}
		})
	}
}

func TestMaxSteps(t *testing.T) {
	e := graph(t, scenario.Restart, 3)
	for _, s := range []string{"hello", "weather", "more"} {
		if _, err := say(t, e, "c", s); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
	}
	_, err := say(t, e, "c", "time")
	var m *scenario.Miss
	if !errors.As(err, &m) || !strings.Contains(m.Reason, "3 answers (max-steps)") {
		t.Fatalf("past max-steps: %v", err)
	}
	// Each conversation has its own count.
	if _, err := say(t, e, "other", "hello"); err != nil {
		t.Errorf("another conversation: %v", err)
	}
}

func TestDeterministicIDs(t *testing.T) {
	b := scenario.New("ids").Model("scripted-model")
	b.Fixture("paris", parisFixture(t))
	b.Step("one").CallsPreset("weather", map[string]string{"location": "Lyon"}, "").
		CallsFunction("lookup", map[string]int{"n": 1}, "").
		CallsFunction("lookup", nil, "").
		CallsFunction("lookup", nil, "call_lookup_3")
	b.Step("two").CallsFixture("paris").CallsPreset("weather", map[string]string{"location": "Nice"}, "")
	b.Step("three").Text("done").ID("my-id").Created(time.Unix(1800000000, 0))
	ids := func(d scenario.Delivery) string {
		var out []string
		for _, c := range d.Answer.ToolCalls {
			out = append(out, c.ID)
		}
		return strings.Join(out, " ")
	}
	run := func() []scenario.Delivery {
		e := build(t, b)
		var out []scenario.Delivery
		for range 3 {
			out = append(out, answer(t, e, request(t, "c", wire.KindOpenAIChat, `{"messages":[]}`)))
		}
		return out
	}
	got := run()
	if s := ids(got[0]); s != "call_weather call_lookup call_lookup_2 call_lookup_3" {
		t.Errorf("first answer's call ids: %s", s)
	}
	// The fixture takes the default id too, so it counts on.
	if s := ids(got[1]); s != "call_weather_2 call_weather_3" {
		t.Errorf("second answer's call ids: %s", s)
	}
	if a := got[0].Answer; a.ID != "chatcmpl-ids-1" || !a.Created.Equal(scenario.DefaultCreated) || a.Created.Unix() != 1700000000 || a.Model != "scripted-model" {
		t.Errorf("first answer: id %q created %v model %q", a.ID, a.Created, a.Model)
	}
	if a := got[2].Answer; a.ID != "my-id" || a.Created.Unix() != 1800000000 {
		t.Errorf("third answer: id %q created %v", a.ID, a.Created)
	}
	again := run()
	for i := range got {
		if fmt.Sprint(got[i].Answer) != fmt.Sprint(again[i].Answer) {
			t.Errorf("answer %d differs between two runs:\n%v\n%v", i, got[i].Answer, again[i].Answer)
		}
	}
}

func TestDefaultUsageAndFinish(t *testing.T) {
	b := scenario.New("usage")
	b.Step("text").Text("12345").Reasoning("abc")
	b.Step("calls").CallsFunction("f", map[string]int{"a": 1}, "")
	b.Step("given").Text("x").Usage(7, 9).Finish(wire.FinishLength)
	b.Step("reasoned").Text("y").UsageWithReasoning(7, 9, 4)
	e := build(t, b)
	body := chat(user("q")) // 72 bytes
	d := answer(t, e, request(t, "c", wire.KindOpenAIChat, body))
	if want := (wire.Usage{Input: (len(body) + 3) / 4, Output: 2}); d.Answer.Usage != want || d.Answer.Finish != wire.FinishStop {
		t.Errorf("text answer: usage %+v finish %q; want %+v stop", d.Answer.Usage, d.Answer.Finish, want)
	}
	d = answer(t, e, request(t, "c", wire.KindOpenAIChat, body))
	if d.Answer.Usage.Output != 2 || d.Answer.Finish != wire.FinishToolCalls { // "f" + {"a":1} = 8 bytes
		t.Errorf("call answer: usage %+v finish %q", d.Answer.Usage, d.Answer.Finish)
	}
	d = answer(t, e, request(t, "c", wire.KindOpenAIChat, body))
	if d.Answer.Usage != (wire.Usage{Input: 7, Output: 9}) || d.Answer.Finish != wire.FinishLength {
		t.Errorf("given: usage %+v finish %q", d.Answer.Usage, d.Answer.Finish)
	}
	d = answer(t, e, request(t, "c", wire.KindOpenAIChat, body))
	if d.Answer.Usage != (wire.Usage{Input: 7, Output: 9, Reasoning: 4}) {
		t.Errorf("given with reasoning: usage %+v", d.Answer.Usage)
	}
}

func TestErrorAnswerAndDelivery(t *testing.T) {
	b := scenario.New("retry")
	b.Step("busy").Error(scenario.ErrorAnswer{Status: 429, Message: "slow down", RetryAfter: 2 * time.Second})
	b.Step("ok").Text("fine").Delay(time.Second).Stream(3, 10*time.Millisecond).CutAfter(2)
	e := build(t, b)
	d := answer(t, e, request(t, "", wire.KindAnthropicMessages, `{"model":"claude","messages":[]}`))
	if d.Error == nil || d.Error.Status != 429 || d.Error.RetryAfter != 2*time.Second || d.Answer.ID != "msg_retry-1" || d.Answer.Model != "claude" {
		t.Errorf("error delivery = %+v", d)
	}
	d = answer(t, e, request(t, "", wire.KindAnthropicMessages, `{"model":"claude","messages":[]}`))
	if d.Error != nil || d.Answer.Text != "fine" || d.Delay != time.Second || d.Stream.Chunk != 3 || d.Stream.Interval != 10*time.Millisecond || d.CutAfter != 2 {
		t.Errorf("retried delivery = %+v", d)
	}
}

// TestParallelConversations runs conversations of the graph at once; each
// follows its own path (run with -race).
func TestParallelConversations(t *testing.T) {
	e := graph(t, scenario.Restart, 0)
	script := []struct{ say, step string }{
		{"hello", "hello"}, {"weather", "weather"}, {"more", "menu"}, {"time", "time"}, {"more", "menu"}, {"bye", "bye"},
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for c := range 16 {
		wg.Go(func() {
			conv := fmt.Sprintf("conv-%d", c)
			for round := range 3 {
				for k, turn := range script {
					p, err := e.Answer(request(t, conv, wire.KindOpenAIChat, chat(user(turn.say))))
					if err != nil {
						errs <- fmt.Errorf("%s round %d %q: %w", conv, round, turn.say, err)
						return
					}
					if p.Step != turn.step {
						errs <- fmt.Errorf("%s: %q answered by %q", conv, turn.say, p.Step)
					}
					if want := fmt.Sprintf("chatcmpl-graph-%d", round*len(script)+1+k); p.Answer.ID != want {
						errs <- fmt.Errorf("%s: id %q, want %q", conv, p.Answer.ID, want)
					}
					p.Commit()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestSameConversationInParallel: requests of one conversation at once are
// all answered or missed cleanly, and each commit counts once.
func TestSameConversationInParallel(t *testing.T) {
	b := scenario.New("busy").OnExhausted(scenario.RepeatLast)
	b.Step("only").Text("x")
	e := build(t, b)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			p, err := e.Answer(request(t, "c", wire.KindOpenAIChat, chat(user("q"))))
			if err != nil {
				t.Error(err)
				return
			}
			p.Commit()
		})
	}
	wg.Wait()
	if d := answer(t, e, request(t, "c", wire.KindOpenAIChat, chat(user("q")))); d.Answer.ID != "chatcmpl-busy-33" {
		t.Errorf("after 32 commits the id is %q", d.Answer.ID)
	}
}

// TestConversationsPastTheBound: past MaxConversations named conversations
// the least recently used is forgotten (it starts again), never refusing a
// new one; a name longer than MaxConversationName is ErrConversationName.
func TestConversationsPastTheBound(t *testing.T) {
	b := scenario.New("many").OnExhausted(scenario.RepeatLast)
	b.Step("first").Text("x")
	b.Step("second").Text("y")
	e := build(t, b)
	body := chat(user("q"))
	for i := range scenario.MaxConversations {
		answer(t, e, request(t, fmt.Sprint(i), wire.KindOpenAIChat, body))
	}
	if d := answer(t, e, request(t, "0", wire.KindOpenAIChat, body)); d.Step != "second" {
		t.Errorf("conversation 0, used last: step %q, want second", d.Step)
	}
	for _, name := range []string{"one more", "and another"} {
		if d := answer(t, e, request(t, name, wire.KindOpenAIChat, body)); d.Step != "first" {
			t.Errorf("new conversation %q: step %q, want first", name, d.Step)
		}
	}
	if d := answer(t, e, request(t, "1", wire.KindOpenAIChat, body)); d.Step != "first" {
		t.Errorf("conversation 1, the least recently used, was not forgotten: step %q", d.Step)
	}
	if d := answer(t, e, request(t, "0", wire.KindOpenAIChat, body)); d.Step != "second" {
		t.Errorf("conversation 0, recently used, was forgotten: step %q", d.Step)
	}
	long := strings.Repeat("n", scenario.MaxConversationName+1)
	if _, err := e.Answer(request(t, long, wire.KindOpenAIChat, body)); !errors.Is(err, scenario.ErrConversationName) {
		t.Errorf("a %d-byte name: %v, want ErrConversationName", len(long), err)
	}
}

// TestParallelToolCalls: one answer calls two fixtures of one preset; the
// next step wants both results, on a wire with call ids and on one without.
func TestParallelToolCalls(t *testing.T) {
	london, err := presets.Weather.Success(
		presets.WeatherArgs{Location: "London"},
		presets.WeatherResult{Location: "London", Temperature: 12, Unit: presets.Celsius, Condition: "rain"})
	if err != nil {
		t.Fatal(err)
	}
	b := scenario.New("two")
	b.Fixture("paris", parisFixture(t)).Fixture("london", london)
	b.Step("ask").CallsFixture("paris", "london")
	b.Step("answer").WhenFixtureResult("london").WhenFixtureResult("paris").Text("Sunny and rainy.")
	londonResult := `{"location":"London","temperature":12,"unit":"celsius","condition":"rain"}`

	t.Run("openai-chat", func(t *testing.T) {
		e := build(t, b)
		d := answer(t, e, request(t, "", wire.KindOpenAIChat, chat(user("both?"))))
		if got := []string{d.Answer.ToolCalls[0].ID, d.Answer.ToolCalls[1].ID}; got[0] != "call_weather" || got[1] != "call_weather_2" {
			t.Fatalf("ids = %q", got)
		}
		calls := `{"role":"assistant","tool_calls":[` +
			`{"id":"call_weather","type":"function","function":{"name":"weather","arguments":` + quoteJSON(parisArgs) + `}},` +
			`{"id":"call_weather_2","type":"function","function":{"name":"weather","arguments":` + quoteJSON(`{"location":"London"}`) + `}}]}`
		parisTurn := `{"role":"tool","tool_call_id":"call_weather","content":` + quoteJSON(parisResult) + `}`
		londonTurn := `{"role":"tool","tool_call_id":"call_weather_2","content":` + quoteJSON(londonResult) + `}`
		// Only one result sent: a miss naming the missing one.
		m := miss(t, e, request(t, "", wire.KindOpenAIChat, chat(user("both?"), calls, parisTurn)))
		if c := m.Candidates[0]; c.Condition != "tool-result.arguments" || !strings.Contains(c.Wants, "London") {
			t.Errorf("one result of two: %+v", c)
		}
		if d := answer(t, e, request(t, "", wire.KindOpenAIChat, chat(user("both?"), calls, londonTurn, parisTurn))); d.Step != "answer" {
			t.Errorf("both results: step %q", d.Step)
		}
	})
	t.Run("gemini without ids", func(t *testing.T) {
		e := build(t, b)
		answer(t, e, request(t, "", wire.KindGemini, `{"contents":[{"role":"user","parts":[{"text":"both?"}]}]}`))
		body := `{"contents":[{"role":"user","parts":[{"text":"both?"}]},
			{"role":"model","parts":[{"functionCall":{"name":"weather","args":` + parisArgs + `}},{"functionCall":{"name":"weather","args":{"location":"London"}}}]},
			{"role":"user","parts":[{"functionResponse":{"name":"weather","response":` + parisResult + `}},{"functionResponse":{"name":"weather","response":` + londonResult + `}}]}]}`
		if d := answer(t, e, request(t, "", wire.KindGemini, body)); d.Step != "answer" {
			t.Errorf("step %q", d.Step)
		}
	})
}

// TestDocsScenarios runs the example scenarios of docs/scenarios through the
// conversations docs/scenarios.md tells.
func TestDocsScenarios(t *testing.T) {
	load := func(name string) *scenario.Engine {
		s, err := scenario.Load("../docs/scenarios/" + name)
		return mustEngine(t, s, err)
	}
	t.Run("support", func(t *testing.T) {
		e := load("support.yaml")
		offer := `,"tools":[{"type":"function","function":{"name":"lookup_order"}},{"type":"function","function":{"name":"web_search"}}]}`
		ask := func(msgs ...string) scenario.Delivery {
			return answer(t, e, request(t, "c", wire.KindOpenAIChat, strings.TrimSuffix(chat(msgs...), "}")+offer))
		}
		if d := ask(user("Hello there")); d.Step != "hello" {
			t.Fatalf("hello: %q", d.Step)
		}
		d := ask(user("Where is my order?"))
		if d.Step != "order" || d.Answer.ToolCalls[0].ID != "call_lookup_order" || string(d.Answer.ToolCalls[0].Arguments) != `{"order":1042}` {
			t.Fatalf("order: %+v", d)
		}
		callTurn := `{"role":"assistant","tool_calls":[{"id":"call_lookup_order","type":"function","function":{"name":"lookup_order","arguments":"{\"order\": 1042}"}}]}`
		resultTurn := `{"role":"tool","tool_call_id":"call_lookup_order","content":"{\"status\":\"shipping\"}"}`
		if d := ask(user("Where is my order?"), callTurn, resultTurn); d.Step != "order-status" {
			t.Fatalf("order-status: %q", d.Step)
		}
		d = ask(user("and my password?"))
		if d.Step != "account" || d.Answer.ToolCalls[0].Name != "web_search" {
			t.Fatalf("account: %+v", d)
		}
		help := d.Fixtures[0]
		callTurn = `{"role":"assistant","tool_calls":[{"id":"call_web_search","type":"function","function":{"name":"web_search","arguments":` + quoteJSON(string(help.Call.Arguments)) + `}}]}`
		resultTurn = `{"role":"tool","tool_call_id":"call_web_search","content":` + quoteJSON(string(help.Result.Content)) + `}`
		if d := ask(user("and my password?"), callTurn, resultTurn); d.Step != "account-help" {
			t.Fatalf("account-help: %q", d.Step)
		}
		if d := ask(user("no, thanks")); d.Step != "bye" {
			t.Fatalf("bye: %q", d.Step)
		}
		if d := ask(user("hi again")); d.Step != "hello" {
			t.Errorf("after restart: %q", d.Step)
		}
	})
	t.Run("retry", func(t *testing.T) {
		e := load("retry.yaml")
		d := answer(t, e, request(t, "c", wire.KindOpenAIChat, chat(user("q"))))
		if d.Error == nil || d.Error.Status != 429 || d.Error.RetryAfter != time.Second {
			t.Fatalf("first: %+v", d)
		}
		if d := answer(t, e, request(t, "c", wire.KindOpenAIChat, chat(user("q")))); d.Answer.Text != "Here is your answer." {
			t.Errorf("retry: %+v", d)
		}
	})
	t.Run("cut-stream", func(t *testing.T) {
		e := load("cut-stream.yaml")
		d := answer(t, e, request(t, "c", wire.KindOpenAIChat, chat(user("story"))))
		if d.CutAfter != 3 || len(d.Stream.Pieces(d.Answer.Text)) != 8 {
			t.Fatalf("broken: cut %d, %d pieces", d.CutAfter, len(d.Stream.Pieces(d.Answer.Text)))
		}
		if d := answer(t, e, request(t, "c", wire.KindOpenAIChat, chat(user("story")))); d.Step != "whole" || d.CutAfter != 0 {
			t.Errorf("whole: %+v", d)
		}
	})
	t.Run("weather", func(t *testing.T) {
		e := load("weather.yaml")
		for _, conv := range []string{"a", "b"} {
			answer(t, e, request(t, conv, wire.KindOpenAIChat, weatherRounds[0].ask))
			if d := answer(t, e, request(t, conv, wire.KindOpenAIChat, weatherRounds[0].answer)); d.Answer.Text != "Paris is sunny, 21 °C." || d.Answer.ID != "chatcmpl-weather-2" {
				t.Errorf("conversation %s: %+v", conv, d)
			}
		}
	})
}

// TestEngineKeepsItsCopy: changing a scenario after NewEngine changes
// nothing the engine answers.
func TestEngineKeepsItsCopy(t *testing.T) {
	s, err := scenario.Load("testdata/valid/weather.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := mustEngine(t, s, nil)
	s.Steps[0].When.LatestUser.Value = "something else"
	s.Fixtures[0].Call.Arguments[2] = 'X'
	s.Steps[1].Respond.Text = "changed"
	d := answer(t, e, request(t, "", wire.KindOpenAIChat, weatherRounds[0].ask))
	if string(d.Answer.ToolCalls[0].Arguments) != parisArgs {
		t.Errorf("arguments = %s", d.Answer.ToolCalls[0].Arguments)
	}
	if d := answer(t, e, request(t, "", wire.KindOpenAIChat, weatherRounds[0].answer)); d.Answer.Text != "Paris is sunny, 21 °C." {
		t.Errorf("text = %q", d.Answer.Text)
	}
}
