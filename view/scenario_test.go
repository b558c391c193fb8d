package view_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
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

// fromCassetteGraph is a graph shaped as scenario from-cassette writes
// one: convs conversations of one or two steps (every second one has two),
// each conversation's last step leading on to the first step of every
// conversation, the next recorded one first.
func fromCassetteGraph(convs int) view.Graph {
	var ids [][]string
	n := 0
	for c := range convs {
		var conv []string
		for range 1 + c%2 {
			n++
			conv = append(conv, fmt.Sprintf("i%d", n))
		}
		ids = append(ids, conv)
	}
	g := view.Graph{Name: "recorded", File: "recorded.yaml"}
	for c, conv := range ids {
		for t, id := range conv {
			st := view.Step{ID: id, When: fmt.Sprintf(`latest-user equals "question %d, turn %d: the weather in Paris?"`, c, t),
				Respond: fmt.Sprintf(`text "answer %d: sunny"`, c)}
			if t+1 < len(conv) {
				st.Then = []string{conv[t+1]}
			} else {
				for j := range convs {
					st.Then = append(st.Then, ids[(c+1+j)%convs][0])
				}
			}
			g.Steps = append(g.Steps, st)
		}
	}
	return g
}

// TestLargeScenarioGraph draws the 18 steps of a 12-conversation
// from-cassette scenario: each conversation a lane of straight arrows, and
// a step that may lead to 12 others says so in a line instead of drawing
// 12 arcs. The table still lists every target.
func TestLargeScenarioGraph(t *testing.T) {
	src := sampleSource(t)
	src.graphs = []view.Graph{fromCassetteGraph(12)}
	srv, _ := serve(t, src, "")
	_, body := get(t, srv.URL+"/_llmproxy/ui/scenario")
	if n := strings.Count(body, `<g class="node`); n != 18 {
		t.Errorf("%d nodes, want 18", n)
	}
	// Six two-step conversations: six arrows inside a lane, and nothing
	// else drawn.
	if n := strings.Count(body, `<path class="edge`); n != 6 {
		t.Errorf("%d edges drawn, want the 6 inside conversations", n)
	}
	if n := strings.Count(body, "then any of 12:"); n != 12 {
		t.Errorf("%d steps say they lead to any of 12 steps, want the 12 conversations' last steps", n)
	}
	width := regexp.MustCompile(`<svg viewBox="0 0 ([0-9.]+) `).FindStringSubmatch(body)
	if w, _ := strconv.ParseFloat(width[1], 64); w > 600 {
		t.Errorf("the graph is %.0f wide for conversations that follow one another; want one lane wide", w)
	}
	if !strings.Contains(body, "<td><code>i2</code>, <code>i4</code>, <code>i5</code>, <code>i7</code>") {
		t.Errorf("the table does not list a fanned-out step's targets")
	}
}

// TestScenarioPageBounded: the scenario page grows with the steps, not
// with steps × targets (a from-cassette scenario of N conversations lists
// N² targets), and is bounded however large the scenario.
func TestScenarioPageBounded(t *testing.T) {
	src := sampleSource(t)
	srv, _ := serve(t, src, "")
	size := func(g view.Graph) (steps, bytes int, body string) {
		src.graphs = []view.Graph{g}
		_, body = get(t, srv.URL+"/_llmproxy/ui/scenario")
		return len(g.Steps), len(body), body
	}
	steps, bytes, _ := size(fromCassetteGraph(400))
	if per := bytes / steps; per > 3000 {
		t.Errorf("%d steps of up to 400 targets each: %d bytes, %d a step; want at most 3000 a step", steps, bytes, per)
	}
	// 30 000 steps in a line, each answering a long question.
	long := view.Graph{Name: "long"}
	for k := range 30000 {
		long.Steps = append(long.Steps, view.Step{ID: fmt.Sprintf("s%d", k+1), When: `latest-user equals "` + strings.Repeat("why? ", 200) + `"`,
			Respond: `text "because"`, Then: []string{fmt.Sprintf("s%d", k+2)}})
	}
	steps, bytes, body := size(long)
	if bytes > 4<<20 {
		t.Errorf("%d steps: a page of %d bytes; want at most 4 MiB", steps, bytes)
	}
	if !strings.Contains(body, "The graph shows the first 300 of 30000 steps") || !strings.Contains(body, "The table lists the first 1000 of 30000 steps") {
		t.Errorf("a cut page does not say where it stops:\n%.3000s", body)
	}
}

// TestScenarioLanes: conversations recorded interleaved stand side by side,
// each down its own column; ones that follow each other share a column.
func TestScenarioLanes(t *testing.T) {
	src := sampleSource(t)
	srv, _ := serve(t, src, "")
	rectX := regexp.MustCompile(`<rect x="([0-9.]+)"`)
	for _, tc := range []struct {
		name  string
		steps []view.Step
		want  string // each node's column, by its x
	}{
		{"interleaved", []view.Step{{ID: "a1", Then: []string{"a2"}}, {ID: "b1", Then: []string{"b2"}}, {ID: "a2", Then: []string{}}, {ID: "b2", Then: []string{}}},
			"16 472 16 472"},
		{"one after the other", []view.Step{{ID: "a1", Then: []string{"a2"}}, {ID: "a2", Then: []string{}}, {ID: "b1", Then: []string{"b2"}}, {ID: "b2", Then: []string{}}},
			"16 16 16 16"},
		{"a branch", []view.Step{{ID: "ask", Then: []string{"yes", "no"}}, {ID: "yes", Then: []string{"ask"}}, {ID: "no", Complete: true}},
			"16 16 16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src.graphs = []view.Graph{{Name: tc.name, Steps: tc.steps}}
			_, body := get(t, srv.URL+"/_llmproxy/ui/scenario")
			var xs []string
			for _, m := range rectX.FindAllStringSubmatch(body, -1) {
				xs = append(xs, m[1])
			}
			if got := strings.Join(xs, " "); got != tc.want {
				t.Errorf("nodes at x %s, want %s", got, tc.want)
			}
		})
	}
}
