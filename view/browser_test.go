package view_test

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/uitest"
	"github.com/llmproxy/llmproxy/view"
)

var screenshots = flag.String("screenshots", "", "save screenshots of the web view's pages into this `directory` (../docs for the README's)")

// TestScenarioInBrowser draws a scenario graph in headless Chromium: every
// step a node, the answered ones marked, hostile step text shown as text.
func TestScenarioInBrowser(t *testing.T) {
	b := uitest.NewBrowser(t)
	src := sampleSource(t)
	src.graphs = []view.Graph{{Name: "weather", File: "testdata/weather.yaml", Steps: []view.Step{
		{ID: "ask", When: `latest-user equals "What's the weather in Paris?"`, Respond: "tool-calls: weather (fixture paris)", Then: []string{"answer", "apologise"}, Answered: 1},
		{ID: "answer", When: "tool-result fixture paris", Respond: `text "Paris is sunny, 21 °C."`, Then: []string{"follow-up"}, Answered: 1},
		{ID: "apologise", When: "tool-result name weather, is error", Respond: `text "Sorry, no weather today."`, Complete: true},
		{ID: "follow-up", When: `latest-user contains "tomorrow"`, Respond: "tool-calls: weather (fixture paris-tomorrow)", Then: []string{"ask", "bye"}},
		{ID: "bye", When: "", Respond: `text "` + uitest.HostileAnswer + `"`, Complete: true},
	}}}
	srv, _ := serve(t, src, "")
	b.Open(srv.URL+"/_llmproxy/ui/scenario", "figure.graph svg")
	if n := uitest.Eval[int](b, `document.querySelectorAll("figure.graph g.node").length`); n != 5 {
		t.Errorf("%d nodes, want 5", n)
	}
	answered := uitest.Eval[[]string](b, `[...document.querySelectorAll("g.node.answered text.id")].map(e => e.textContent)`)
	if strings.Join(answered, "|") != "✓ ask · answered 1×|✓ answer · answered 1×" {
		t.Errorf("answered nodes read %q", answered)
	}
	if n := uitest.Eval[int](b, `document.querySelectorAll("figure.graph path.edge").length`); n != 5 {
		t.Errorf("%d edges, want 5 (ask→answer, ask→apologise, answer→follow-up, follow-up→ask, follow-up→bye)", n)
	}
	if n := uitest.Eval[int](b, `document.querySelectorAll("figure.graph path.edge.back").length`); n != 1 {
		t.Errorf("%d edges drawn back up, want 1 (follow-up→ask)", n)
	}
	if w := uitest.Eval[float64](b, `document.querySelector("figure.graph svg").getBoundingClientRect().width`); w < 300 {
		t.Errorf("the graph is %.0f px wide", w)
	}
	if got := uitest.Eval[string](b, `typeof window.pwned`); got != "undefined" {
		t.Error("a step's text ran as script")
	}
	b.Screenshot(*screenshots, "view-scenario.png")
	b.Check()
}

// TestLargeScenarioInBrowser draws the 18 steps of a 12-conversation
// from-cassette scenario: one lane, no two nodes overlapping, an arrow
// inside each two-step conversation, and each conversation's last step
// saying in a line where it may lead instead of drawing a dozen arcs.
func TestLargeScenarioInBrowser(t *testing.T) {
	b := uitest.NewBrowser(t)
	src := sampleSource(t)
	src.graphs = []view.Graph{fromCassetteGraph(12)}
	srv, _ := serve(t, src, "")
	b.Open(srv.URL+"/_llmproxy/ui/scenario", "figure.graph svg")
	if n := uitest.Eval[int](b, `document.querySelectorAll("figure.graph g.node").length`); n != 18 {
		t.Errorf("%d nodes, want 18", n)
	}
	if n := uitest.Eval[int](b, `document.querySelectorAll("figure.graph path.edge").length`); n != 6 {
		t.Errorf("%d edges, want 6", n)
	}
	overlaps := uitest.Eval[int](b, `(() => {
		const boxes = [...document.querySelectorAll("figure.graph g.node rect")].map(r => r.getBoundingClientRect());
		let n = 0;
		for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
			const a = boxes[i], c = boxes[j];
			if (a.left < c.right && c.left < a.right && a.top < c.bottom && c.top < a.bottom) n++;
		}
		return n;
	})()`)
	if overlaps != 0 {
		t.Errorf("%d pairs of nodes overlap", overlaps)
	}
	fans := uitest.Eval[[]string](b, `[...document.querySelectorAll("figure.graph text.fan")].map(e => e.textContent)`)
	if len(fans) != 12 || !strings.HasPrefix(fans[0], "then any of 12: i2, i4, i5, i7") {
		t.Errorf("the fanned-out steps read %q", fans)
	}
	// Text is drawn at its size: the graph fits the window's width.
	if w := uitest.Eval[float64](b, `document.querySelector("figure.graph svg").getBoundingClientRect().width`); w > 700 {
		t.Errorf("the graph is %.0f px wide", w)
	}
	if n := uitest.Eval[int](b, `document.querySelectorAll("table.steps tbody tr").length`); n != 18 {
		t.Errorf("the table has %d rows, want 18", n)
	}
	b.Screenshot(*screenshots, "view-scenario-large.png")
	b.Check()
}

// TestFilterInBrowser types words of a prompt into the interactions filter
// in headless Chromium: the table narrows to the interactions whose
// conversation holds them, and each row shows its latest user text.
func TestFilterInBrowser(t *testing.T) {
	b := uitest.NewBrowser(t)
	var is []*cassette.Interaction
	for k := range 18 {
		is = append(is, chat("You are terse.", nil, fmt.Sprintf("Question %d: what is the weather in Paris?", k), "Sunny.", ""))
	}
	is = append(is, chat("You answer as a pirate.", nil, "How tall is the tower?", "Arr, 330 metres.", ""))
	srv, _ := serve(t, view.CassetteSource{C: writeCassette(t, is)}, "")
	b.Open(srv.URL+"/_llmproxy/ui/", "table.interactions")
	const rows = `document.querySelectorAll("table.interactions tbody tr").length`
	if n := uitest.Eval[int](b, rows); n != 19 {
		t.Fatalf("%d rows, want 19", n)
	}
	b.Do("type a word of a prompt", chromedp.SendKeys(chromedp.ID("filter"), "Paris"))
	b.WaitFor("the table shows the 18 about Paris", rows+` === 18 && location.search === "?q=Paris"`)
	b.Do("clear the filter", chromedp.KeyEvent("\u001b"))
	b.WaitFor("the table shows every row again", rows+` === 19`)
	b.Do("type a word of a system prompt", chromedp.SendKeys(chromedp.ID("filter"), "pirate"))
	b.WaitFor("the table shows the pirate's", rows+` === 1 && location.search === "?q=pirate"`)
	if got := uitest.Eval[string](b, `document.querySelector("table.interactions tbody td.preview").textContent`); got != "How tall is the tower?" {
		t.Errorf("the row's preview reads %q", got)
	}
	b.Check()
}
