package scenario

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/llmproxy/llmproxy/wire"
)

// This file decodes the scenario format, key by key, into the model.

// scenario decodes the top-level mapping.
func (d *decoder) scenario(root *yaml.Node, s *Scenario) {
	top := loc{}
	m := d.mapping(root, top, "a scenario", "version", "name", "on-exhausted", "max-steps", "model", "fixtures", "steps")
	if m == nil {
		return
	}
	if e, ok := m["version"]; ok {
		if v, ok := d.integer(e, top.key("version"), 0); ok && v != 1 {
			d.errorAt(e.value, top.key("version"), "%d is not a known version; this llmproxy reads version 1", v)
		}
	}
	if e, ok := m["name"]; ok {
		s.Name, _ = d.str(e, top.key("name"))
	}
	if e, ok := m["on-exhausted"]; ok {
		v, _ := d.str(e, top.key("on-exhausted"))
		s.OnExhausted = Exhausted(v)
	}
	if e, ok := m["max-steps"]; ok {
		s.MaxSteps, _ = d.integer(e, top.key("max-steps"), 1)
	}
	if e, ok := m["model"]; ok {
		s.Model, _ = d.str(e, top.key("model"))
	}
	if e, ok := m["fixtures"]; ok {
		d.fixtures(e, s)
	}
	e, ok := m["steps"]
	if !ok {
		d.errorAt(root, top, "a scenario needs steps")
		return
	}
	d.steps(e, s)
}

func (d *decoder) fixtures(e entry, s *Scenario) {
	n := d.resolve(e.value)
	if n == nil {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.errorAt(n, loc{}.key("fixtures"), "fixtures is a mapping of names to fixtures, not %s", describe(n))
		return
	}
	names := d.mapping(n, loc{}.key("fixtures"), "fixtures")
	for i := 0; i+1 < len(n.Content); i += 2 {
		name := n.Content[i].Value
		fe, ok := names[name]
		if !ok || fe.key != n.Content[i] {
			continue // reported by mapping
		}
		l := fixtureLoc(name)
		fm := d.mapping(fe.value, l, "a fixture", "preset", "as", "id", "arguments", "result", "error", "delay")
		if fm == nil {
			continue
		}
		f := Fixture{Name: name}
		if fe, ok := fm["preset"]; ok {
			f.Preset, _ = d.str(fe, l.key("preset"))
		}
		if fe, ok := fm["as"]; ok {
			f.As, _ = d.str(fe, l.key("as"))
		}
		if fe, ok := fm["id"]; ok {
			f.Call.ID, _ = d.str(fe, l.key("id"))
		}
		f.Call.Name, f.Result.Name, f.Result.CallID = f.Preset, f.Preset, f.Call.ID
		if fe, ok := fm["arguments"]; ok {
			f.Call.Arguments = d.value(fe, l.key("arguments"))
		} else {
			f.Call.Arguments = json.RawMessage("{}")
		}
		res, hasResult := fm["result"]
		fail, hasError := fm["error"]
		switch {
		case hasResult && hasError:
			d.errorAt(fail.key, l, "a fixture has a result or an error, not both")
		case hasResult:
			if f.Result.Content = d.value(res, l.key("result")); f.Result.Content == nil {
				f.Result.Content = json.RawMessage("null")
			}
		case hasError:
			if v := d.value(fail, l.key("error")); v != nil {
				f.Result.Content = append(append(json.RawMessage(`{"error":`), v...), '}')
				f.Result.IsError = true
			} else {
				f.Result.Content, f.Result.IsError = json.RawMessage("null"), true
			}
		}
		if fe, ok := fm["delay"]; ok {
			f.Delay = d.duration(fe, l.key("delay"))
		}
		s.Fixtures = append(s.Fixtures, f)
	}
}

func (d *decoder) steps(e entry, s *Scenario) {
	l := loc{}.key("steps")
	n := d.resolve(e.value)
	if n == nil {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.errorAt(n, l, "steps is a list, not %s", describe(n))
		return
	}
	for i, sn := range n.Content {
		s.Steps = append(s.Steps, d.step(sn, i))
	}
}

func (d *decoder) step(n *yaml.Node, i int) Step {
	var st Step
	// The id names the step in every other error, so it is read first.
	if r := d.resolve(n); r != nil && r.Kind == yaml.MappingNode {
		for k := 0; k+1 < len(r.Content); k += 2 {
			if r.Content[k].Value == "id" && r.Content[k+1].ShortTag() == "!!str" {
				st.ID = r.Content[k+1].Value
			}
		}
	}
	id := st.ID
	if id == "" {
		id = "step-" + strconv.Itoa(i+1)
	}
	l := stepLoc(i, id)
	m := d.mapping(n, l, "a step", "id", "when", "respond", "then", "complete", "start")
	if m == nil {
		return st
	}
	if e, ok := m["id"]; ok {
		d.str(e, l.key("id"))
	}
	if e, ok := m["when"]; ok {
		st.When = d.when(e, l.key("when"))
	}
	if e, ok := m["respond"]; ok {
		st.Respond = d.respond(e, l.key("respond"))
	} else {
		d.errorAt(n, l, "a step needs respond")
	}
	if e, ok := m["then"]; ok {
		st.Then = d.then(e, l.key("then"))
	}
	if e, ok := m["complete"]; ok {
		st.Complete = d.boolean(e, l.key("complete"))
	}
	if e, ok := m["start"]; ok {
		st.Start = new(d.boolean(e, l.key("start")))
	}
	return st
}

func (d *decoder) then(e entry, l loc) []string {
	n := d.resolve(e.value)
	if n == nil {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		if s, ok := d.str(e, l); ok {
			return []string{s}
		}
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.errorAt(n, l, "then is a step id or a list of them, not %s", describe(n))
		return nil
	}
	out := []string{}
	for k, c := range n.Content {
		cl := l.index(k)
		if s, ok := d.str(entry{value: c}, cl); ok {
			out = append(out, s)
		}
	}
	return out
}

func (d *decoder) when(e entry, l loc) Conditions {
	var w Conditions
	m := d.mapping(e.value, l, "when", "latest-user", "system", "tool-result", "model", "api", "tools-offered", "json")
	if e, ok := m["latest-user"]; ok {
		w.LatestUser = d.text(e, l.key("latest-user"))
	}
	if e, ok := m["system"]; ok {
		w.System = d.text(e, l.key("system"))
	}
	if e, ok := m["tool-result"]; ok {
		w.ToolResults = d.toolResults(e, l.key("tool-result"))
	}
	if e, ok := m["model"]; ok {
		w.Model, _ = d.str(e, l.key("model"))
	}
	if e, ok := m["api"]; ok {
		v, _ := d.str(e, l.key("api"))
		w.API = wire.Kind(v)
	}
	if e, ok := m["tools-offered"]; ok {
		w.ToolsOffered = d.strings(e, l.key("tools-offered"))
	}
	if e, ok := m["json"]; ok {
		w.JSON = d.jsonConds(e, l.key("json"))
	}
	return w
}

func (d *decoder) text(e entry, l loc) *TextCondition {
	m := d.mapping(e.value, l, "a text condition", "equals", "contains", "matches")
	if m == nil {
		return nil
	}
	if len(m) != 1 {
		if n := d.resolve(e.value); n != nil && (len(m) > 1 || len(n.Content) == 0) {
			d.errorAt(e.value, l, "a text condition has exactly one of equals, contains or matches")
		}
		return nil
	}
	for op, v := range m {
		s, ok := d.str(v, l.key(op))
		if !ok {
			return nil
		}
		return &TextCondition{Op: TextOp(op), Value: s}
	}
	return nil
}

func (d *decoder) toolResults(e entry, l loc) []ToolResultCondition {
	n := d.resolve(e.value)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return []ToolResultCondition{d.toolResult(n, l)}
	}
	var out []ToolResultCondition
	for k, c := range n.Content {
		out = append(out, d.toolResult(c, l.index(k)))
	}
	return out
}

func (d *decoder) toolResult(n *yaml.Node, l loc) ToolResultCondition {
	var tr ToolResultCondition
	m := d.mapping(n, l, "a tool-result condition", "fixture", "name", "id", "arguments", "result")
	if e, ok := m["fixture"]; ok {
		tr.Fixture, _ = d.str(e, l.key("fixture"))
	}
	if e, ok := m["name"]; ok {
		tr.Name, _ = d.str(e, l.key("name"))
	}
	if e, ok := m["id"]; ok {
		tr.ID, _ = d.str(e, l.key("id"))
	}
	if e, ok := m["arguments"]; ok {
		tr.Arguments = d.value(e, l.key("arguments"))
	}
	if e, ok := m["result"]; ok {
		tr.Result = d.value(e, l.key("result"))
	}
	return tr
}

func (d *decoder) strings(e entry, l loc) []string {
	n := d.resolve(e.value)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.errorAt(n, l, "a list of names, not %s", describe(n))
		return nil
	}
	var out []string
	for k, c := range n.Content {
		if s, ok := d.str(entry{value: c}, l.index(k)); ok {
			out = append(out, s)
		}
	}
	return out
}

func (d *decoder) jsonConds(e entry, l loc) []JSONCondition {
	n := d.resolve(e.value)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.errorAt(n, l, "json is a list of {path, equals}, not %s", describe(n))
		return nil
	}
	var out []JSONCondition
	for k, c := range n.Content {
		cl := l.index(k)
		m := d.mapping(c, cl, "a json condition", "path", "equals")
		if m == nil {
			continue
		}
		var jc JSONCondition
		if e, ok := m["path"]; ok {
			jc.Path, _ = d.str(e, cl.key("path"))
		}
		if e, ok := m["equals"]; ok {
			jc.Equals = d.value(e, cl.key("equals"))
		} else {
			d.errorAt(c, cl, "a json condition needs equals")
			jc.Equals = json.RawMessage("null")
		}
		out = append(out, jc)
	}
	return out
}

func (d *decoder) respond(e entry, l loc) Answer {
	var a Answer
	m := d.mapping(e.value, l, "respond", "text", "json", "reasoning", "tool-calls", "finish", "usage", "id", "created", "error", "delay", "stream", "cut-after")
	if m == nil {
		return a
	}
	if fail, ok := m["error"]; ok {
		if len(m) > 1 {
			var others []string
			for k := range m {
				if k != "error" {
					others = append(others, k)
				}
			}
			slices.Sort(others)
			d.errorAt(fail.key, l, "an error answer has nothing else in respond (here also: %s)", strings.Join(others, ", "))
		}
		a.Error = d.errorAnswer(fail, l.key("error"))
		return a
	}
	if e, ok := m["text"]; ok {
		if n := d.resolve(e.value); n != nil && n.Kind == yaml.MappingNode {
			a.TextFrom = d.textFrom(e, l.key("text"))
		} else {
			a.Text, _ = d.str(e, l.key("text"))
		}
	}
	if e, ok := m["json"]; ok {
		a.JSON = d.jsonAnswer(e, l.key("json"))
	}
	if e, ok := m["reasoning"]; ok {
		a.Reasoning, _ = d.str(e, l.key("reasoning"))
	}
	if e, ok := m["tool-calls"]; ok {
		a.ToolCalls = d.calls(e, l.key("tool-calls"))
	}
	if e, ok := m["finish"]; ok {
		v, _ := d.str(e, l.key("finish"))
		a.Finish = wire.Finish(v)
	}
	if e, ok := m["usage"]; ok {
		a.Usage = d.usage(e, l.key("usage"))
	}
	if e, ok := m["id"]; ok {
		a.ID, _ = d.str(e, l.key("id"))
	}
	if e, ok := m["created"]; ok {
		if v, ok := d.integer(e, l.key("created"), 0); ok {
			a.Created = time.Unix(int64(v), 0).UTC()
		}
	}
	if e, ok := m["delay"]; ok {
		a.Delay = d.duration(e, l.key("delay"))
	}
	if e, ok := m["stream"]; ok {
		sl := l.key("stream")
		sm := d.mapping(e.value, sl, "stream", "chunk", "interval")
		if e, ok := sm["chunk"]; ok {
			a.Stream.Chunk, _ = d.integer(e, sl.key("chunk"), 1)
		}
		if e, ok := sm["interval"]; ok {
			a.Stream.Interval = d.duration(e, sl.key("interval"))
		}
	}
	if e, ok := m["cut-after"]; ok {
		a.CutAfter, _ = d.integer(e, l.key("cut-after"), 1)
	}
	return a
}

// jsonAnswer reads json: VALUE, or json: {generate: true}.
func (d *decoder) jsonAnswer(e entry, l loc) *JSONAnswer {
	if n := d.resolve(e.value); n != nil && n.Kind == yaml.MappingNode && len(n.Content) == 2 && n.Content[0].Value == "generate" {
		if !d.boolean(entry{n.Content[0], n.Content[1]}, l.key("generate")) {
			d.errorAt(n.Content[1], l.key("generate"), "generate is true: a json answer that is a mapping of generate alone asks for a value made from the request's schema")
		}
		return &JSONAnswer{Generate: true}
	}
	w := jsonWriter{d: d, base: l}
	if !w.write(e.value, 0) {
		return nil
	}
	return &JSONAnswer{Value: w.b.Bytes()}
}

// textFrom reads a text generator: {template}, {echo: true} or {summary}.
func (d *decoder) textFrom(e entry, l loc) *TextFrom {
	m := d.mapping(e.value, l, "a text generator", "template", "echo", "summary")
	if m == nil {
		return nil
	}
	if len(m) != 1 {
		d.errorAt(e.value, l, "a text generator has exactly one of template, echo or summary")
		return nil
	}
	g := &TextFrom{}
	if e, ok := m["template"]; ok {
		g.Template, _ = d.str(e, l.key("template"))
	}
	if e, ok := m["echo"]; ok {
		if g.Echo = d.boolean(e, l.key("echo")); !g.Echo {
			d.errorAt(e.value, l.key("echo"), "echo is true (leave it out for no echo)")
		}
	}
	if e, ok := m["summary"]; ok {
		sl := l.key("summary")
		sm := d.mapping(e.value, sl, "a summary", "max-chars", "sentences")
		if sm == nil {
			return nil
		}
		g.Summary = &Summary{}
		if e, ok := sm["max-chars"]; ok {
			g.Summary.MaxChars, _ = d.integer(e, sl.key("max-chars"), 1)
		}
		if e, ok := sm["sentences"]; ok {
			g.Summary.Sentences, _ = d.integer(e, sl.key("sentences"), 1)
		}
		if len(sm) == 0 {
			d.errorAt(e.value, sl, "a summary needs max-chars, sentences or both")
		}
	}
	return g
}

func (d *decoder) usage(e entry, l loc) *wire.Usage {
	m := d.mapping(e.value, l, "usage", "input", "output", "reasoning")
	if m == nil {
		return nil
	}
	var u wire.Usage
	for _, k := range []string{"input", "output"} {
		if _, ok := m[k]; !ok {
			d.errorAt(e.value, l, "usage needs input and output")
			return nil
		}
	}
	u.Input, _ = d.integer(m["input"], l.key("input"), 0)
	u.Output, _ = d.integer(m["output"], l.key("output"), 0)
	if v, ok := m["reasoning"]; ok {
		u.Reasoning, _ = d.integer(v, l.key("reasoning"), 0)
	}
	return &u
}

func (d *decoder) errorAnswer(e entry, l loc) *ErrorAnswer {
	var ea ErrorAnswer
	m := d.mapping(e.value, l, "an error answer", "status", "type", "message", "retry-after")
	if e, ok := m["status"]; ok {
		ea.Status, _ = d.integer(e, l.key("status"), 0)
	}
	if e, ok := m["type"]; ok {
		ea.Type, _ = d.str(e, l.key("type"))
	}
	if e, ok := m["message"]; ok {
		ea.Message, _ = d.str(e, l.key("message"))
	}
	if e, ok := m["retry-after"]; ok {
		ea.RetryAfter = d.duration(e, l.key("retry-after"))
	}
	return &ea
}

func (d *decoder) calls(e entry, l loc) []CallAnswer {
	n := d.resolve(e.value)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.errorAt(n, l, "tool-calls is a list, not %s", describe(n))
		return nil
	}
	var out []CallAnswer
	for k, c := range n.Content {
		cl := l.index(k)
		m := d.mapping(c, cl, "a tool call", "fixture", "preset", "as", "function", "id", "arguments")
		if m == nil {
			continue
		}
		var ca CallAnswer
		if e, ok := m["fixture"]; ok {
			ca.Fixture, _ = d.str(e, cl.key("fixture"))
		}
		if e, ok := m["preset"]; ok {
			ca.Preset, _ = d.str(e, cl.key("preset"))
		}
		if e, ok := m["as"]; ok {
			ca.As, _ = d.str(e, cl.key("as"))
		}
		if e, ok := m["function"]; ok {
			ca.Function, _ = d.str(e, cl.key("function"))
		}
		if e, ok := m["id"]; ok {
			ca.ID, _ = d.str(e, cl.key("id"))
		}
		if e, ok := m["arguments"]; ok {
			ca.Arguments = d.value(e, cl.key("arguments"))
		}
		out = append(out, ca)
	}
	return out
}
