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
