package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/wire"
)

// Builder makes a Scenario in Go: the same value a file gives, checked by
// the same rules. Its methods chain; problems are kept and reported, all of
// them, by Build.
//
//	b := scenario.New("weather")
//	b.Fixture("paris", paris) // a presets.Weather.Success(…) fixture
//	b.Step("ask").WhenLatestUser(scenario.Equals("Weather in Paris?")).CallsFixture("paris")
//	b.Step("answer").WhenFixtureResult("paris").Text("Sunny, 21 °C.").Complete()
//	s, err := b.Build()
type Builder struct {
	s    Scenario
	errs ErrorList
}

// New starts a scenario of the given name.
func New(name string) *Builder {
	return &Builder{s: Scenario{Name: name}}
}

// OnExhausted sets what a conversation does after its last step.
func (b *Builder) OnExhausted(x Exhausted) *Builder {
	b.s.OnExhausted = x
	return b
}

// MaxSteps bounds the answers of a conversation.
func (b *Builder) MaxSteps(n int) *Builder {
	b.s.MaxSteps = n
	return b
}

// Model sets the model named in answers when the request names none.
func (b *Builder) Model(model string) *Builder {
	b.s.Model = model
	return b
}

// Fixture adds a named fixture made by a preset (presets.Weather.Success,
// …Failure). A call id that is the preset's default (call_<function>) takes
// the default numbering within a conversation, as a file's fixture without
// id does.
func (b *Builder) Fixture(name string, f presets.Fixture) *Builder {
	if d, ok := presets.Lookup(f.Preset); ok && f.Call.ID == d.DefaultID() {
		f.Call.ID, f.Result.CallID = "", ""
	}
	f.Call.Arguments = b.canonical(fixtureLoc(name).key("arguments"), f.Call.Arguments)
	f.Result.Content = b.canonical(fixtureLoc(name).key("result"), f.Result.Content)
	b.s.Fixtures = append(b.s.Fixtures, Fixture{Name: name, Fixture: f})
	return b
}

// FixtureAs adds a named fixture as Fixture does, its call named function
// (the application's own name for the preset, as the file's as: says).
func (b *Builder) FixtureAs(name, function string, f presets.Fixture) *Builder {
	b.Fixture(name, f)
	b.s.Fixtures[len(b.s.Fixtures)-1].As = function
	return b
}

// Step adds a step; id "" takes the default step-N.
func (b *Builder) Step(id string) *StepBuilder {
	b.s.Steps = append(b.s.Steps, Step{ID: id})
	return &StepBuilder{b: b, i: len(b.s.Steps) - 1}
}

// Build checks the scenario and returns it, or an ErrorList of every
// problem.
func (b *Builder) Build() (*Scenario, error) {
	s := b.s.clone()
	errs := slices.Clone(b.errs)
	if _, found := compile(s); found != nil {
		errs = append(errs, found...)
	}
	if len(errs) > 0 {
		for _, e := range errs {
			e.scenario = s.Name
		}
		return nil, errs
	}
	return s, nil
}

// jsonOf turns a Go value into canonical JSON: a json.RawMessage is taken as
// JSON text, anything else is marshalled.
func (b *Builder) jsonOf(l loc, v any) json.RawMessage {
	raw, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			b.errs = append(b.errs, &Error{Where: l.where(), Message: fmt.Sprintf("not JSON: %v", err), ptr: l.ptr})
			return nil
		}
	}
	return b.canonical(l, raw)
}

// canonical returns raw in canonical form; text that is not JSON is a
// problem.
func (b *Builder) canonical(l loc, raw json.RawMessage) json.RawMessage {
	if raw == nil {
		return nil
	}
	canon, err := presets.Canonical(raw)
	if err != nil {
		b.errs = append(b.errs, &Error{Where: l.where(), Message: "not a JSON value", ptr: l.ptr})
		return nil
	}
	return canon
}

// Equals is the condition that a text is s.
func Equals(s string) TextCondition { return TextCondition{Op: OpEquals, Value: s} }

// Contains is the condition that a text contains s.
func Contains(s string) TextCondition { return TextCondition{Op: OpContains, Value: s} }

// Matches is the condition that the RE2 regular expression re matches a
// text.
func Matches(re string) TextCondition { return TextCondition{Op: OpMatches, Value: re} }

// StepBuilder sets one step's conditions, answer and successors.
type StepBuilder struct {
	b *Builder
	i int
}

func (sb *StepBuilder) step() *Step { return &sb.b.s.Steps[sb.i] }

func (sb *StepBuilder) loc() loc {
	id := sb.step().ID
	if id == "" {
		id = fmt.Sprintf("step-%d", sb.i+1)
	}
	return stepLoc(sb.i, id)
}

// WhenLatestUser adds a condition on the latest user text.
func (sb *StepBuilder) WhenLatestUser(c TextCondition) *StepBuilder {
	sb.step().When.LatestUser = &c
	return sb
}

// WhenSystem adds a condition on the system prompt.
func (sb *StepBuilder) WhenSystem(c TextCondition) *StepBuilder {
	sb.step().When.System = &c
	return sb
}

// WhenFixtureResult adds the condition that the request sends the named
// fixture's result for its call.
func (sb *StepBuilder) WhenFixtureResult(fixture string) *StepBuilder {
	sb.step().When.ToolResults = append(sb.step().When.ToolResults, ToolResultCondition{Fixture: fixture})
	return sb
}

// WhenToolResult adds the condition that the request sends a result for
// the call of function name; id, arguments and result (when not nil; a
// json.RawMessage is JSON text, anything else is marshalled) narrow it.
func (sb *StepBuilder) WhenToolResult(name, id string, arguments, result any) *StepBuilder {
	w := &sb.step().When
	l := sb.loc().key("when").key("tool-result")
	tr := ToolResultCondition{Name: name, ID: id}
	if arguments != nil {
		tr.Arguments = sb.b.jsonOf(l.key("arguments"), arguments)
	}
	if result != nil {
		tr.Result = sb.b.jsonOf(l.key("result"), result)
	}
	w.ToolResults = append(w.ToolResults, tr)
	return sb
}

// WhenModel adds the condition that the request names model.
func (sb *StepBuilder) WhenModel(model string) *StepBuilder {
	sb.step().When.Model = model
	return sb
}

// WhenAPI adds the condition that the request is of API kind k.
func (sb *StepBuilder) WhenAPI(k wire.Kind) *StepBuilder {
	sb.step().When.API = k
	return sb
}

// WhenToolsOffered adds the condition that the request offers at least
// these function tools.
func (sb *StepBuilder) WhenToolsOffered(names ...string) *StepBuilder {
	sb.step().When.ToolsOffered = append(sb.step().When.ToolsOffered, names...)
	return sb
}

// WhenJSON adds the condition that the request body's gjson path holds
// equals (a json.RawMessage is JSON text, anything else is marshalled).
func (sb *StepBuilder) WhenJSON(path string, equals any) *StepBuilder {
	w := &sb.step().When
	l := sb.loc().key("when").key("json").index(len(w.JSON))
	w.JSON = append(w.JSON, JSONCondition{Path: path, Equals: sb.b.jsonOf(l.key("equals"), equals)})
	return sb
}

// Text sets the answer's text.
func (sb *StepBuilder) Text(text string) *StepBuilder {
	sb.step().Respond.Text = text
	return sb
}

// JSON answers structured output with value (a json.RawMessage is JSON
// text, anything else is marshalled), checked at answer time against the
// schema the request asks for.
func (sb *StepBuilder) JSON(value any) *StepBuilder {
	v := sb.b.jsonOf(sb.loc().key("respond").key("json"), value)
	if raw, ok := value.(json.RawMessage); ok {
		var b bytes.Buffer
		if json.Compact(&b, raw) == nil {
			v = b.Bytes() // key order as the caller wrote it
		}
	}
	sb.step().Respond.JSON = &JSONAnswer{Value: v}
	return sb
}

// GenerateJSON answers structured output with the minimal value valid
// against the schema the request asks for.
func (sb *StepBuilder) GenerateJSON() *StepBuilder {
	sb.step().Respond.JSON = &JSONAnswer{Generate: true}
	return sb
}

// TextFrom derives the answer's text from the request: a template, an
// echo or a summary of the latest user text.
func (sb *StepBuilder) TextFrom(g TextFrom) *StepBuilder {
	if g.Summary != nil {
		g.Summary = new(*g.Summary)
	}
	sb.step().Respond.TextFrom = &g
	return sb
}

// Reasoning sets the answer's reasoning text.
func (sb *StepBuilder) Reasoning(text string) *StepBuilder {
	sb.step().Respond.Reasoning = text
	return sb
}

// CallsFixture makes the answer call the named fixtures, in order.
func (sb *StepBuilder) CallsFixture(fixtures ...string) *StepBuilder {
	for _, f := range fixtures {
		sb.step().Respond.ToolCalls = append(sb.step().Respond.ToolCalls, CallAnswer{Fixture: f})
	}
	return sb
}

// CallsPreset makes the answer call a preset with arguments (checked against
// its schema); id "" takes the default.
func (sb *StepBuilder) CallsPreset(preset string, arguments any, id string) *StepBuilder {
	return sb.call(CallAnswer{Preset: preset, ID: id}, arguments)
}

// CallsPresetAs makes the answer call a preset under the application's
// function name (the file's as:), with arguments checked against the
// preset's schema; id "" takes the default call_<function>.
func (sb *StepBuilder) CallsPresetAs(preset, function string, arguments any, id string) *StepBuilder {
	return sb.call(CallAnswer{Preset: preset, As: function, ID: id}, arguments)
}

// CallsFunction makes the answer call a function of the application's own;
// id "" takes the default.
func (sb *StepBuilder) CallsFunction(name string, arguments any, id string) *StepBuilder {
	return sb.call(CallAnswer{Function: name, ID: id}, arguments)
}

func (sb *StepBuilder) call(c CallAnswer, arguments any) *StepBuilder {
	a := &sb.step().Respond
	if arguments != nil {
		c.Arguments = sb.b.jsonOf(sb.loc().key("respond").key("tool-calls").index(len(a.ToolCalls)).key("arguments"), arguments)
	}
	a.ToolCalls = append(a.ToolCalls, c)
	return sb
}

// Finish sets the finish reason.
func (sb *StepBuilder) Finish(f wire.Finish) *StepBuilder {
	sb.step().Respond.Finish = f
	return sb
}

// Usage sets the token counts.
func (sb *StepBuilder) Usage(input, output int) *StepBuilder {
	sb.step().Respond.Usage = &wire.Usage{Input: input, Output: output}
	return sb
}

// UsageWithReasoning sets the token counts, reasoning being the part of
// output spent on reasoning (written where the wire counts it apart).
func (sb *StepBuilder) UsageWithReasoning(input, output, reasoning int) *StepBuilder {
	sb.step().Respond.Usage = &wire.Usage{Input: input, Output: output, Reasoning: reasoning}
	return sb
}

// ID sets the response id.
func (sb *StepBuilder) ID(id string) *StepBuilder {
	sb.step().Respond.ID = id
	return sb
}

// Created sets the creation time.
func (sb *StepBuilder) Created(t time.Time) *StepBuilder {
	sb.step().Respond.Created = t.UTC()
	return sb
}

// Error makes the answer a provider error.
func (sb *StepBuilder) Error(e ErrorAnswer) *StepBuilder {
	sb.step().Respond.Error = &e
	return sb
}

// Delay sets the wait before the first byte.
func (sb *StepBuilder) Delay(d time.Duration) *StepBuilder {
	sb.step().Respond.Delay = d
	return sb
}

// Stream sets how a streamed answer's text is cut (chunk characters a
// piece; 0 for one piece per word) and paced.
func (sb *StepBuilder) Stream(chunk int, interval time.Duration) *StepBuilder {
	sb.step().Respond.Stream = Stream{Chunk: chunk, Interval: interval}
	return sb
}

// CutAfter closes the connection after n streamed events (after the headers
// for a request that does not stream).
func (sb *StepBuilder) CutAfter(n int) *StepBuilder {
	sb.step().Respond.CutAfter = n
	return sb
}

// Then sets the steps that may answer next, tried in order.
func (sb *StepBuilder) Then(ids ...string) *StepBuilder {
	sb.step().Then = append([]string{}, ids...)
	return sb
}

// Start makes the step an entry step: one that may begin a conversation
// (start: true). The first step is one unless NoStart says otherwise.
func (sb *StepBuilder) Start() *StepBuilder {
	sb.step().Start = new(true)
	return sb
}

// NoStart makes the step no entry step (start: false): meant for the first
// step, which is one by default.
func (sb *StepBuilder) NoStart() *StepBuilder {
	sb.step().Start = new(false)
	return sb
}

// Complete ends the conversation at this step.
func (sb *StepBuilder) Complete() *StepBuilder {
	sb.step().Complete = true
	return sb
}
