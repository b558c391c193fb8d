package scenario

import (
	"bytes"
	"encoding/json"
	"slices"
	"time"

	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/wire"
)

// Scenario is a scripted conversation: what the model answers, step by step.
// Load reads one from a file and Builder makes one in Go; both give the same
// value, and the Engine serves it. NewEngine and Builder.Build keep copies:
// changing a Scenario afterwards changes neither.
type Scenario struct {
	// Name names the scenario in response ids, logs and misses. A file's
	// default is its file name up to the first dot.
	Name string
	// OnExhausted decides what a conversation does after its last step.
	// The zero value is Reject.
	OnExhausted Exhausted
	// MaxSteps bounds the answers a conversation gets; past it every request
	// is a miss. Zero means no limit.
	MaxSteps int
	// Model is the model named in answers when the request names none.
	Model string
	// Fixtures are the named preset fixtures, in file order.
	Fixtures []Fixture
	// Steps are the steps, in file order. The entry steps (see Step.Start)
	// may begin a conversation.
	Steps []Step
}

// Exhausted is what a conversation does once it has answered its last step
// (a complete step, or the last step with no then).
type Exhausted string

const (
	// Reject answers every later request with a miss.
	Reject Exhausted = "reject"
	// RepeatLast answers again with the step last answered, without checking
	// its conditions.
	RepeatLast Exhausted = "repeat-last"
	// Restart goes back to the first step.
	Restart Exhausted = "restart"
)

// Fixture is a named preset fixture: a call of one of the twelve presets and
// the result (or error envelope) its tool gives.
//
// The embedded presets.Fixture holds the preset's function name, the call's
// arguments and the result content as JSON; Result.IsError marks an error
// envelope. Call.ID (and Result.CallID) is "" when the fixture takes the
// default id: call_<function>, numbered within a conversation (call_weather,
// call_weather_2, …). Delay is waited before the first byte of an answer that
// makes the call.
//
// As, when set, is the application's own function name for the preset: the
// answer calls As (get_weather) with arguments checked against the preset's
// schema, and the default id is call_<As>. The embedded call and result
// keep the preset's name.
type Fixture struct {
	Name string
	As   string
	presets.Fixture
}

// Step is one answer of the script, with the conditions a request must meet
// to get it and where the conversation goes next.
type Step struct {
	// ID names the step; the default is step-N, N counting from 1 in file
	// order.
	ID string
	// When holds the conditions; all must hold. The zero value always holds.
	When Conditions
	// Respond is the answer.
	Respond Answer
	// Then lists the steps that may answer next, tried in order. nil means
	// the next step in file order (none after the last step); an empty
	// non-nil list means none.
	Then []string
	// Complete ends the conversation at this step: a later request is
	// handled by the scenario's OnExhausted.
	Complete bool
	// Start says whether the step may begin a conversation (an entry step).
	// nil means the default: the first step is an entry, and in a flat
	// list (no step has a Then or a Start) every step is; a later step is
	// an entry only with Start true, and the first step is not with Start
	// false.
	Start *bool
}

// Conditions are what a request must show to be answered by a step.
type Conditions struct {
	// LatestUser is on the text of the latest user turn (its text parts
	// joined with "\n"; a user turn holding only tool results is skipped).
	LatestUser *TextCondition
	// System is on the text of the system prompt (system and developer
	// turns, Anthropic system, Gemini systemInstruction, Responses
	// instructions).
	System *TextCondition
	// ToolResults each name a call that the request's latest tool results
	// answer; all must hold.
	ToolResults []ToolResultCondition
	// Model is the model the request names; "" for any.
	Model string
	// API is the request's API kind; "" for any.
	API wire.Kind
	// ToolsOffered are function names the request must offer (at least
	// these).
	ToolsOffered []string
	// JSON are conditions on the request body as sent.
	JSON []JSONCondition
}

// TextCondition compares a text with Value: equal, containing it, or
// matching it as an RE2 regular expression.
type TextCondition struct {
	Op    TextOp
	Value string
}

// TextOp is how a TextCondition compares.
type TextOp string

const (
	// OpEquals holds when the text is Value.
	OpEquals TextOp = "equals"
	// OpContains holds when the text contains Value.
	OpContains TextOp = "contains"
	// OpMatches holds when the RE2 regular expression Value matches the text
	// (anywhere, unless anchored).
	OpMatches TextOp = "matches"
)

// ToolResultCondition holds when one of the request's latest tool results
// (those after its last assistant turn) answers the call it describes.
// Either Fixture is set, and the call and result are the fixture's, or Name
// is, with optional ID, Arguments and Result. Arguments and Result are
// compared as JSON values (key order, whitespace and number spelling aside).
type ToolResultCondition struct {
	Fixture   string
	Name      string
	ID        string
	Arguments json.RawMessage
	Result    json.RawMessage
}

// JSONCondition holds when the gjson Path of the request body is equal, as
// a JSON value, to Equals.
type JSONCondition struct {
	Path   string
	Equals json.RawMessage
}

// Answer is what a step answers: a model answer (text, reasoning, tool
// calls) or an error, with how it is delivered.
type Answer struct {
	Text string
	// TextFrom derives the text from the request instead of Text; nil for
	// none.
	TextFrom *TextFrom
	// JSON answers structured output: a JSON value instead of text and
	// tool calls; nil for none.
	JSON      *JSONAnswer
	Reasoning string
	ToolCalls []CallAnswer
	// Finish is the finish reason; "" means tool-calls when the answer calls
	// tools, else stop.
	Finish wire.Finish
	// Usage is the token count (Reasoning the part of Output spent on
	// reasoning, 0 for none); nil means 1 token per 4 bytes, rounded up,
	// of the request body (input) and of the answer's text, reasoning and
	// calls (output).
	Usage *wire.Usage
	// ID overrides the response id; "" means the provider's prefix followed
	// by <scenario>-<n>.
	ID string
	// Created overrides the creation time; the zero time means
	// 1700000000 (DefaultCreated).
	Created time.Time
	// Error makes the answer a provider error; nothing else but the above
	// delivery fields is then set.
	Error *ErrorAnswer
	// Delay is waited before the first byte.
	Delay time.Duration
	// Stream says how a streamed answer's text is cut and paced.
	Stream Stream
	// CutAfter, when positive, closes the connection after that many
	// streamed events; for a request that does not stream, after the status
	// and headers, before the body.
	CutAfter int
}

// CallAnswer is one tool call of an answer: a named fixture's call, a
// preset's call with arguments checked against its schema, or a call of the
// application's own function.
type CallAnswer struct {
	// Fixture names a fixture of the scenario; nothing else is set.
	Fixture string
	// Preset is a preset's function name.
	Preset string
	// As is the application's function name for Preset's call ("" for the
	// preset's own); only with Preset.
	As string
	// Function is a function of the application's own.
	Function string
	// ID is the call id; "" takes the default call_<function> numbering.
	ID string
	// Arguments is a JSON object; nil means {}.
	Arguments json.RawMessage
}

// JSONAnswer is a structured-output answer: a JSON value, as the text (or,
// for an Anthropic request that forces a tool, as that tool's arguments).
// When the request asks for a schema (wire.OutputOf), the value is checked
// against it at answer time, and one that does not satisfy it is a miss
// naming the path.
type JSONAnswer struct {
	// Value is the JSON value; nil with Generate.
	Value json.RawMessage
	// Generate makes the value from the request's schema: the minimal
	// value valid against it (package internal/jsonschemagen). A request
	// that asks for no schema, or one no value can be made for, is a miss.
	Generate bool
}

// TextFrom derives an answer's text from the request, deterministically.
// Exactly one of its fields is set.
type TextFrom struct {
	// Template is text with fields in double braces: {{latest_user}} (the
	// latest user text), {{model}} (the model the request names, else the
	// answer's), {{system}} (the system prompt), {{capture.N}} and
	// {{capture.NAME}} (a group of the step's latest-user matches
	// condition; "" when it did not take part in the match).
	Template string
	// Echo answers the latest user text as it is.
	Echo bool
	// Summary answers an extract of the latest user text.
	Summary *Summary
}

// Summary is an extract of a text: its whitespace collapsed, its first
// Sentences sentences (0: all), cut at a word to at most MaxChars
// characters (0: no limit), "…" marking a cut. A sentence ends at '.', '!'
// or '?' followed by a space or the end.
type Summary struct {
	MaxChars  int
	Sentences int
}

// ErrorAnswer is a provider error: its HTTP status, its type ("" for the
// provider's own type for the status), its message and an optional
// Retry-After.
type ErrorAnswer struct {
	Status     int
	Type       string
	Message    string
	RetryAfter time.Duration
}

// Stream cuts a streamed answer's text into pieces of Chunk characters
// (zero: one piece per word) sent Interval apart.
type Stream struct {
	Chunk    int
	Interval time.Duration
}

// clone returns a deep copy of s, so that what an Engine or a Builder keeps
// cannot change when the caller changes s.
func (s *Scenario) clone() *Scenario {
	c := *s
	c.Fixtures = slices.Clone(s.Fixtures)
	for i := range c.Fixtures {
		f := &c.Fixtures[i]
		f.Call.Arguments = bytes.Clone(f.Call.Arguments)
		f.Result.Content = bytes.Clone(f.Result.Content)
	}
	c.Steps = slices.Clone(s.Steps)
	for i := range c.Steps {
		st := &c.Steps[i]
		st.Then = slices.Clone(st.Then)
		if st.Start != nil {
			st.Start = new(*st.Start)
		}
		w := &st.When
		if w.LatestUser != nil {
			w.LatestUser = new(*w.LatestUser)
		}
		if w.System != nil {
			w.System = new(*w.System)
		}
		w.ToolResults = slices.Clone(w.ToolResults)
		for k := range w.ToolResults {
			tr := &w.ToolResults[k]
			tr.Arguments, tr.Result = bytes.Clone(tr.Arguments), bytes.Clone(tr.Result)
		}
		w.ToolsOffered = slices.Clone(w.ToolsOffered)
		w.JSON = slices.Clone(w.JSON)
		for k := range w.JSON {
			w.JSON[k].Equals = bytes.Clone(w.JSON[k].Equals)
		}
		a := &st.Respond
		a.ToolCalls = slices.Clone(a.ToolCalls)
		for k := range a.ToolCalls {
			a.ToolCalls[k].Arguments = bytes.Clone(a.ToolCalls[k].Arguments)
		}
		if a.Usage != nil {
			a.Usage = new(*a.Usage)
		}
		if a.Error != nil {
			a.Error = new(*a.Error)
		}
		if a.JSON != nil {
			a.JSON = &JSONAnswer{Value: bytes.Clone(a.JSON.Value), Generate: a.JSON.Generate}
		}
		if a.TextFrom != nil {
			a.TextFrom = new(*a.TextFrom)
			if a.TextFrom.Summary != nil {
				a.TextFrom.Summary = new(*a.TextFrom.Summary)
			}
		}
	}
	return &c
}
