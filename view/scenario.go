package view

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/scenario"
)

// ScenarioGraph describes a scenario for the scenario page: each step's
// conditions and answer in a line, and the steps that may follow it (the
// next one in the file unless the step says otherwise or is complete).
// answered counts the answers each step, by id, gave in this process; nil
// means none.
func ScenarioGraph(s *scenario.Scenario, file string, answered map[string]int) Graph {
	g := Graph{Name: s.Name, File: file}
	for k, st := range s.Steps {
		then := st.Then
		switch {
		case st.Complete:
			then = nil
		case then == nil && k+1 < len(s.Steps):
			then = []string{s.Steps[k+1].ID}
		}
		g.Steps = append(g.Steps, Step{
			ID: st.ID, When: describeWhen(st.When), Respond: describeAnswer(st.Respond),
			Then: then, Complete: st.Complete, Answered: answered[st.ID],
		})
	}
	return g
}

// describeWhen says a step's conditions in one line, as a scenario file
// writes them; "" when the step always holds.
func describeWhen(c scenario.Conditions) string {
	var parts []string
	text := func(key string, t *scenario.TextCondition) {
		if t != nil {
			parts = append(parts, fmt.Sprintf("%s %s %q", key, t.Op, t.Value))
		}
	}
	text("latest-user", c.LatestUser)
	text("system", c.System)
	for _, r := range c.ToolResults {
		if r.Fixture != "" {
			parts = append(parts, "tool-result fixture "+r.Fixture)
			continue
		}
		p := "tool-result " + r.Name
		if r.ID != "" {
			p += " id " + r.ID
		}
		if r.Arguments != nil {
			p += " arguments " + compactJSON(r.Arguments)
		}
		if r.Result != nil {
			p += " result " + compactJSON(r.Result)
		}
		parts = append(parts, p)
	}
	if c.Model != "" {
		parts = append(parts, "model "+c.Model)
	}
	if c.API != "" {
		parts = append(parts, "api "+string(c.API))
	}
	if len(c.ToolsOffered) > 0 {
		parts = append(parts, "tools-offered "+strings.Join(c.ToolsOffered, ", "))
	}
	for _, j := range c.JSON {
		parts = append(parts, fmt.Sprintf("json %s = %s", j.Path, compactJSON(j.Equals)))
	}
	return strings.Join(parts, "; ")
}

// describeAnswer says a step's answer in one line.
func describeAnswer(a scenario.Answer) string {
	var parts []string
	if a.Error != nil {
		e := fmt.Sprintf("error %d", a.Error.Status)
		if a.Error.Type != "" {
			e += " " + a.Error.Type
		}
		parts = append(parts, fmt.Sprintf("%s %q", e, a.Error.Message))
	}
	if a.Reasoning != "" {
		parts = append(parts, fmt.Sprintf("reasoning %q", a.Reasoning))
	}
	if a.Text != "" {
		parts = append(parts, fmt.Sprintf("text %q", a.Text))
	}
	var calls []string
	for _, c := range a.ToolCalls {
		switch {
		case c.Fixture != "":
			calls = append(calls, "fixture "+c.Fixture)
		case c.Preset != "":
			calls = append(calls, "preset "+c.Preset+" "+compactJSON(c.Arguments))
		default:
			calls = append(calls, c.Function+" "+compactJSON(c.Arguments))
		}
	}
	if len(calls) > 0 {
		parts = append(parts, "tool-calls: "+strings.Join(calls, ", "))
	}
	if a.Finish != "" {
		parts = append(parts, "finish "+string(a.Finish))
	}
	if a.Delay > 0 {
		parts = append(parts, "delay "+a.Delay.String())
	}
	if a.CutAfter > 0 {
		parts = append(parts, fmt.Sprintf("cut-after %d", a.CutAfter))
	}
	return strings.Join(parts, "; ")
}

// compactJSON is JSON text without insignificant space ({} when absent).
func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// ScenarioSource is the Source of scenarios alone, as llmproxy view
// --scenario shows them: their graphs, no cassette, an empty log.
type ScenarioSource struct {
	Graphs []Graph
}

var _ Source = ScenarioSource{}

// Cassettes implements Source: there are none.
func (ScenarioSource) Cassettes(context.Context) ([]string, error) { return nil, ErrNoCassette }

// Last implements Source.
func (ScenarioSource) Last(context.Context, string) (uint64, error) { return 0, ErrNoCassette }

// Walk implements Source.
func (ScenarioSource) Walk(context.Context, string, uint64, bool, func(*cassette.Interaction) (bool, error)) error {
	return ErrNoCassette
}

// Interaction implements Source.
func (ScenarioSource) Interaction(context.Context, string, uint64) (*cassette.Interaction, error) {
	return nil, ErrNoCassette
}

// Fixture implements Source.
func (ScenarioSource) Fixture(context.Context, string, string) (json.RawMessage, error) {
	return nil, ErrNoCassette
}

// Served implements Source: nothing is served.
func (ScenarioSource) Served(string, uint64) bool { return false }

// Log implements Source: nothing is served.
func (ScenarioSource) Log(context.Context, uint64, int) ([]LogEntry, error) { return nil, nil }

// LogChanged implements Source: the log never changes.
func (ScenarioSource) LogChanged() <-chan struct{} { return nil }

// Scenarios implements Source.
func (s ScenarioSource) Scenarios(context.Context) ([]Graph, error) { return s.Graphs, nil }
