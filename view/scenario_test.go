package view_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/scenario"
	"github.com/llmproxy/llmproxy/view"
)

const weatherScenario = `version: 1
name: weather
fixtures:
  paris:
    preset: weather
    arguments: {location: Paris, unit: celsius}
    result: {location: Paris, temperature: 21, unit: celsius, condition: sunny}
steps:
  - id: ask
    when: {latest-user: {equals: "What's the weather in Paris?"}}
    respond: {tool-calls: [{fixture: paris}]}
  - id: answer
    when: {tool-result: {fixture: paris}}
    respond: {text: "Paris is sunny, 21 °C."}
    then: [ask, bye, never]
  - id: bye
    respond: {text: "<b>Bye</b>", delay: 20ms}
    complete: true
  - id: never
    when: {model: gpt-4o, api: openai-chat, tools-offered: [weather]}
    respond: {error: {status: 429, message: slow down}}
    then: []
`

func TestScenarioGraph(t *testing.T) {
	s, err := scenario.Parse("weather.yaml", []byte(weatherScenario))
	if err != nil {
		t.Fatal(err)
	}
	g := view.ScenarioGraph(s, "weather.yaml", map[string]int{"ask": 2})
	want := []view.Step{
		{ID: "ask", When: `latest-user equals "What's the weather in Paris?"`, Respond: "tool-calls: fixture paris", Then: []string{"answer"}, Answered: 2},
		{ID: "answer", When: "tool-result fixture paris", Respond: `text "Paris is sunny, 21 °C."`, Then: []string{"ask", "bye", "never"}},
		{ID: "bye", Respond: `text "<b>Bye</b>"; delay 20ms`, Complete: true},
		{ID: "never", When: "model gpt-4o; api openai-chat; tools-offered weather", Respond: `error 429 "slow down"`, Then: []string{}},
	}
	if g.Name != "weather" || g.File != "weather.yaml" || len(g.Steps) != len(want) {
		t.Fatalf("graph %s (%s) with %d steps", g.Name, g.File, len(g.Steps))
	}
	for k, w := range want {
		got := g.Steps[k]
		if got.ID != w.ID || got.When != w.When || got.Respond != w.Respond || strings.Join(got.Then, ",") != strings.Join(w.Then, ",") ||
			got.Complete != w.Complete || got.Answered != w.Answered {
			t.Errorf("step %d:\n got %+v\nwant %+v", k, got, w)
		}
	}
}

func TestScenarioSource(t *testing.T) {
	s, err := scenario.Parse("weather.yaml", []byte(weatherScenario))
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := serve(t, view.ScenarioSource{Graphs: []view.Graph{view.ScenarioGraph(s, "weather.yaml", nil)}}, "")
	resp, body := get(t, srv.URL+"/_llmproxy/ui/scenario")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if missing := containsAll(body, "4 steps, 0 answered", "&lt;b&gt;Bye&lt;/b&gt;", `class="edge back"`, "never"); missing != "" {
		t.Errorf("the scenario page lacks %q", missing)
	}
	if _, body := get(t, srv.URL+"/_llmproxy/ui/"); !strings.Contains(body, "This process serves scenarios, no cassette") {
		t.Errorf("the interactions page of a scenario view:\n%.2000s", body)
	}
	if resp, _ := get(t, srv.URL+"/_llmproxy/ui/interactions/1"); resp.StatusCode != 404 {
		t.Errorf("an interaction of a scenario view: status %d", resp.StatusCode)
	}
}

// The kitchen-sink scenario of package scenario describes every key.
func TestScenarioGraphEveryKey(t *testing.T) {
	path := filepath.Join("..", "scenario", "testdata", "valid", "everything.yaml")
	s, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g := view.ScenarioGraph(s, path, nil)
	first := g.Steps[0]
	for _, want := range []string{`latest-user matches "(?i)weather"`, `system contains "helpful"`, "model gpt-4o-mini", "api openai-chat",
		"tools-offered weather, fetch_url", "json temperature = 0.5", `json metadata.run = {"id":"r1","tags":["a","b"]}`} {
		if !strings.Contains(first.When, want) {
			t.Errorf("when %q lacks %q", first.When, want)
		}
	}
	for _, want := range []string{`reasoning "The user wants weather."`, `text "Let me check."`, "fixture paris", "fixture down",
		`preset calculator {"expression":"6*7"}`, `lookup_order {"order":42,"verbose":true}`, "finish tool-calls", "delay 150ms"} {
		if !strings.Contains(first.Respond, want) {
			t.Errorf("respond %q lacks %q", first.Respond, want)
		}
	}
	if strings.Join(first.Then, ",") != "results,fallback" {
		t.Errorf("then %v", first.Then)
	}
}
