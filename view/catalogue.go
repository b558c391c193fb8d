package view

import (
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/llmproxy/llmproxy/presets"
)

// presetView is one preset with its three schemas.
type presetView struct {
	Name, Description                string
	Params                           []presets.Param
	Arguments, Result, Error, Anchor string
}

func (h *Handler) presetsPage(w http.ResponseWriter, r *http.Request) {
	var out []presetView
	for _, d := range presets.All() {
		out = append(out, presetView{
			Name: d.Name(), Description: d.Description(), Params: d.Params(), Anchor: d.Name(),
			Arguments: pretty(d.ArgumentsSchema()), Result: pretty(d.ResultSchema()), Error: pretty(d.ErrorSchema()),
		})
	}
	h.render(w, r, http.StatusOK, "presets", &page{Title: "Presets", Nav: "presets", Data: out})
}

// graph layout, in SVG user units.
const (
	nodeX, nodeY, nodeW, nodeH = 16.0, 16.0, 440.0, 58.0
	nodeGap                    = 40.0 // between one node and the next
	laneW                      = 26.0 // between the arcs of jumps
)

// graphView is a scenario laid out: one node per step in file order, an
// arrow down to the next step, arcs on the right for the other jumps.
type graphView struct {
	Graph
	Index         int
	Width, Height float64
	Nodes         []node
	Edges         []edge
	Answered      int
}

type node struct {
	Step
	X, Y, W, H float64
	Title      string
	When       string
	Respond    string
}

type edge struct {
	D     string // the SVG path
	Class string // next, jump or back
}

func layout(n int, g Graph) graphView {
	v := graphView{Graph: g, Index: n}
	at := map[string]int{}
	for k, s := range g.Steps {
		at[s.ID] = k
		if s.Answered > 0 {
			v.Answered++
		}
	}
	y := func(k int) float64 { return nodeY + float64(k)*(nodeH+nodeGap) }
	lanes := 0
	for k, s := range g.Steps {
		v.Nodes = append(v.Nodes, node{
			Step: s, X: nodeX, Y: y(k), W: nodeW, H: nodeH,
			Title: strings.TrimSpace(s.ID + "\nwhen: " + orAlways(s.When) + "\nrespond: " + s.Respond),
			When:  shorten("when "+orAlways(s.When), 62), Respond: shorten("→ "+s.Respond, 62),
		})
		for _, t := range s.Then {
			j, ok := at[t]
			if !ok {
				continue
			}
			if j == k+1 {
				x := nodeX + nodeW/2
				v.Edges = append(v.Edges, edge{D: fmt.Sprintf("M%.1f %.1f V%.1f", x, y(k)+nodeH, y(j)-2), Class: "next"})
				continue
			}
			lanes++
			reach := nodeX + nodeW + float64(lanes)*laneW
			y1, y2 := y(k)+nodeH/2-8, y(j)+nodeH/2+8
			class := "jump"
			if j <= k {
				class = "back"
			}
			v.Edges = append(v.Edges, edge{
				D:     fmt.Sprintf("M%.1f %.1f C%.1f %.1f %.1f %.1f %.1f %.1f", nodeX+nodeW, y1, reach, y1, reach, y2, nodeX+nodeW+2, y2),
				Class: class,
			})
		}
	}
	v.Width = nodeX + nodeW + float64(lanes+1)*laneW + nodeX
	v.Height = y(len(g.Steps)) - nodeGap + nodeY
	return v
}

func orAlways(when string) string {
	if when == "" {
		return "always"
	}
	return when
}

// shorten cuts s to at most n characters.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func (h *Handler) scenarioPage(w http.ResponseWriter, r *http.Request) {
	graphs, err := h.opts.Source.Scenarios(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var out []graphView
	for n, g := range graphs {
		out = append(out, layout(n, g))
	}
	h.render(w, r, http.StatusOK, "scenario", &page{Title: "Scenario", Nav: "scenario", Data: out})
}

// pageNames are the templates under templates/, each parsed with the
// layout and the shared parts.
var pageNames = []string{"interactions", "interaction", "log", "presets", "scenario", "login", "error"}

var funcs = template.FuncMap{
	"ms": func(v float64) string {
		switch {
		case v >= 10000:
			return fmt.Sprintf("%.1f s", v/1000)
		case v >= 100:
			return fmt.Sprintf("%.0f ms", math.Round(v))
		}
		return fmt.Sprintf("%.1f ms", v)
	},
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"join": strings.Join,
	"f1":   func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"plus": func(a, b float64) float64 { return a + b },
}

func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFiles,
			"templates/layout.html", "templates/parts.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("view: template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}
