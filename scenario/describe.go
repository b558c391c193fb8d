package scenario

import (
	"fmt"
	"strings"
)

// StepInfo describes one step of an engine's scenario, as a view of the
// scenario shows it.
type StepInfo struct {
	ID string
	// When and Respond say the step's conditions and its answer in one line
	// each; When is "" for a step that always holds.
	When, Respond string
	// Then lists the steps that may answer next, in the order they are
	// tried, the default filled in; empty when the conversation ends here.
	Then []string
	// Complete marks a step that ends the conversation.
	Complete bool
	// Answered counts the answers the step gave (committed) so far.
	Answered int
}

// Steps describes the scenario's steps in file order, with the answers
// each gave so far.
func (e *Engine) Steps() []StepInfo {
	e.reachedMu.Lock()
	answered := append([]int(nil), e.reached...)
	e.reachedMu.Unlock()
	out := make([]StepInfo, len(e.prog.steps))
	for i, cs := range e.prog.steps {
		st := e.model[i]
		info := StepInfo{ID: cs.id, When: describeWhen(st.When), Respond: describeAnswer(st.Respond), Complete: st.Complete, Answered: answered[i]}
		for _, n := range cs.next {
			info.Then = append(info.Then, e.prog.steps[n].id)
		}
		out[i] = info
	}
	return out
}

func describeWhen(c Conditions) string {
	var parts []string
	text := func(key string, t *TextCondition) {
		if t != nil {
			parts = append(parts, fmt.Sprintf("%s %s %q", key, t.Op, shorten(t.Value, 60)))
		}
	}
	text("latest-user", c.LatestUser)
	text("system", c.System)
	for _, r := range c.ToolResults {
		switch {
		case r.Fixture != "":
			parts = append(parts, "tool-result fixture "+r.Fixture)
		default:
			parts = append(parts, strings.TrimSpace("tool-result "+r.Name+" "+r.ID))
		}
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
		parts = append(parts, fmt.Sprintf("json %s = %s", j.Path, shorten(string(j.Equals), 40)))
	}
	return strings.Join(parts, "; ")
}

func describeAnswer(a Answer) string {
	if a.Error != nil {
		return fmt.Sprintf("error %d %s", a.Error.Status, shorten(a.Error.Message, 60))
	}
	var parts []string
	if a.Reasoning != "" {
		parts = append(parts, fmt.Sprintf("reasoning %q", shorten(a.Reasoning, 40)))
	}
	for _, c := range a.ToolCalls {
		switch {
		case c.Fixture != "":
			parts = append(parts, "call fixture "+c.Fixture)
		case c.Preset != "":
			parts = append(parts, "call preset "+c.Preset)
		default:
			parts = append(parts, "call "+c.Function)
		}
	}
	if a.Text != "" {
		parts = append(parts, fmt.Sprintf("text %q", shorten(a.Text, 60)))
	}
	if a.CutAfter > 0 {
		parts = append(parts, fmt.Sprintf("cut after %d events", a.CutAfter))
	}
	return strings.Join(parts, "; ")
}
