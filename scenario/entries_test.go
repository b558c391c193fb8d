package scenario_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/scenario"
	"github.com/llmproxy/llmproxy/wire"
)

// steps parses a scenario's steps given as YAML and builds its engine.
func steps(t *testing.T, yaml string) *scenario.Engine {
	t.Helper()
	s, err := scenario.Parse("entries.yaml", []byte("version: 1\nname: entries\nsteps:\n"+yaml))
	return mustEngine(t, s, err)
}

// TestEntrySteps: a conversation begins at the first entry step (the first
// step, or one with start: true) whose conditions hold; then lists go on
// from there; a step that is no entry cannot begin one.
func TestEntrySteps(t *testing.T) {
	e := steps(t, `
  - id: greet
    when: {latest-user: {equals: hello}}
    respond: {text: "Hello!"}
    then: bye
  - id: bye
    respond: {text: "Bye."}
    complete: true
  - id: weather
    start: true
    when: {latest-user: {contains: weather}}
    respond: {text: "Which city?"}
    then: city
  - id: city
    respond: {text: "Sunny."}
    complete: true
`)
	for _, tc := range []struct {
		conv, say, step string
	}{
		{"a", "weather?", "weather"}, // a later entry begins a conversation
		{"a", "Paris", "city"},
		{"b", "hello", "greet"}, // the first step stays an entry
		{"b", "weather?", "bye"},
	} {
		if got, err := say(t, e, tc.conv, tc.say); got != tc.step || err != nil {
			t.Errorf("%s says %q: step %q (%v), want %q", tc.conv, tc.say, got, err, tc.step)
		}
	}
	// "city" and "bye" are no entries: a first request they alone fit misses,
	// naming the entries tried.
	_, err := say(t, e, "c", "Paris")
	var m *scenario.Miss
	if !errors.As(err, &m) {
		t.Fatalf("a first request only a non-entry fits: %v, want a miss", err)
	}
	var tried []string
	for _, c := range m.Candidates {
		tried = append(tried, c.Step)
	}
	if strings.Join(tried, ",") != "greet,weather" {
		t.Errorf("miss tried %q, want the entries greet,weather", tried)
	}
}

// TestFlatList: with no then and no start anywhere every step is an entry:
// a conversation begins at the first step in file order whose conditions
// hold, and goes on to the next step in the file.
func TestFlatList(t *testing.T) {
	e := steps(t, `
  - id: greet
    when: {latest-user: {equals: hello}}
    respond: {text: "Hello!"}
  - id: weather
    when: {latest-user: {contains: weather}}
    respond: {text: "Sunny."}
  - id: anything
    respond: {text: "Anything."}
  - id: shadowed
    when: {latest-user: {contains: weather}}
    respond: {text: "Never first."}
`)
	for _, tc := range []struct{ conv, say, step string }{
		{"a", "weather?", "weather"},
		{"a", "hello", "anything"}, // then: the next step in the file
		{"b", "hello", "greet"},
		{"c", "what?", "anything"},
		{"d", "more weather", "weather"}, // the first in file order, not "shadowed"
	} {
		if got, err := say(t, e, tc.conv, tc.say); got != tc.step || err != nil {
			t.Errorf("%s says %q: step %q (%v), want %q", tc.conv, tc.say, got, err, tc.step)
		}
	}
}

// TestStartKeyEndsTheFlatList: one start key anywhere makes the file a
// graph: only the first step and the start: true steps are entries, and
// start: false takes the first step out.
func TestStartKeyEndsTheFlatList(t *testing.T) {
	e := steps(t, `
  - id: intro
    start: false
    respond: {text: "Intro."}
  - id: greet
    start: true
    when: {latest-user: {equals: hello}}
    respond: {text: "Hello!"}
    then: [other, intro]
  - id: other
    when: {latest-user: {equals: other}}
    respond: {text: "Other."}
`)
	if got, err := say(t, e, "a", "hello"); got != "greet" || err != nil {
		t.Errorf("hello: step %q (%v), want greet", got, err)
	}
	for _, text := range []string{"other", "intro"} {
		if got, err := say(t, e, "b", text); !errors.Is(err, scenario.ErrMiss) {
			t.Errorf("%q at the start: step %q (%v), want a miss: only greet is an entry", text, got, err)
		}
	}
	// The builder says the same.
	b := scenario.New("entries")
	b.Step("intro").NoStart().Text("Intro.")
	b.Step("greet").Start().WhenLatestUser(scenario.TextCondition{Op: scenario.OpEquals, Value: "hello"}).Text("Hello!").Then("other", "intro")
	b.Step("other").WhenLatestUser(scenario.TextCondition{Op: scenario.OpEquals, Value: "other"}).Text("Other.")
	built := build(t, b)
	if got, err := say(t, built, "a", "hello"); got != "greet" || err != nil {
		t.Errorf("built: hello: step %q (%v), want greet", got, err)
	}
	if _, err := say(t, built, "b", "intro"); !errors.Is(err, scenario.ErrMiss) {
		t.Errorf("built: a step with NoStart began a conversation: %v", err)
	}
}

// TestManyEntriesMissListsThem: a first request no entry fits lists the
// entries it tried (at most 20 of them), those indexed by their equals
// condition included.
func TestManyEntriesMissListsThem(t *testing.T) {
	var y strings.Builder
	for i := range 30 {
		y.WriteString("  - when: {latest-user: {equals: \"q" + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + "\"}}\n    respond: {text: t}\n")
	}
	e := steps(t, y.String())
	_, err := e.Answer(request(t, "", wire.KindOpenAIChat, chat(user("nothing"))))
	var m *scenario.Miss
	if !errors.As(err, &m) || len(m.Candidates) != 20 || !strings.Contains(m.Error(), "10 more candidate steps") {
		t.Fatalf("miss = %v", err)
	}
	if c := m.Candidates[0]; c.Step != "step-1" || c.Condition != "latest-user" {
		t.Errorf("first candidate = %+v", c)
	}
}
