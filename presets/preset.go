package presets

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/llmproxy/llmproxy/wire"
)

// MaxIDLength is the longest call id, in characters.
const MaxIDLength = 128

// canonicalRaw brings a payload decoded from JSON back to canonical form,
// which a JSON encoder's HTML escaping may have changed.
func canonicalRaw(raw json.RawMessage) (json.RawMessage, error) {
	if raw == nil {
		return nil, nil
	}
	v, err := decode(raw)
	if err != nil {
		return nil, err
	}
	return marshal(v)
}

// Preset is a typed preset: a Descriptor together with the Go types of its
// arguments (A) and successful result (R). Every constructor validates what
// it builds against the preset's schemas.
type Preset[A, R any] struct {
	Descriptor
}

// Call returns the call of this preset with the given arguments. An empty id
// selects DefaultID; any other id must not be blank and must be at most
// MaxIDLength characters.
func (p Preset[A, R]) Call(args A, id string) (wire.ToolCall, error) {
	id, err := p.id(id, "call", "/id")
	if err != nil {
		return wire.ToolCall{}, err
	}
	raw, err := p.encode(partArguments, args)
	if err != nil {
		return wire.ToolCall{}, err
	}
	return wire.ToolCall{ID: id, Name: p.Name(), Arguments: raw}, nil
}

// Result returns the successful tool result answering the call id. The id
// follows the rules of Call.
func (p Preset[A, R]) Result(result R, id string) (wire.ToolResult, error) {
	id, err := p.id(id, "result", "/callId")
	if err != nil {
		return wire.ToolResult{}, err
	}
	raw, err := p.encode(partResult, result)
	if err != nil {
		return wire.ToolResult{}, err
	}
	return wire.ToolResult{CallID: id, Name: p.Name(), Content: raw}, nil
}

// Error returns the failed tool result answering the call id: toolErr in the
// shared error envelope, with IsError set. The id follows the rules of Call.
func (p Preset[A, R]) Error(toolErr ToolError, id string) (wire.ToolResult, error) {
	id, err := p.id(id, "result", "/callId")
	if err != nil {
		return wire.ToolResult{}, err
	}
	raw, err := p.encode(partError, ErrorEnvelope{Error: toolErr})
	if err != nil {
		return wire.ToolResult{}, err
	}
	return wire.ToolResult{CallID: id, Name: p.Name(), Content: raw, IsError: true}, nil
}

// Success returns a fixture in which the call with args succeeds with result.
func (p Preset[A, R]) Success(args A, result R, opts ...FixtureOption) (Fixture, error) {
	o, err := p.options(opts)
	if err != nil {
		return Fixture{}, err
	}
	call, err := p.Call(args, o.id)
	if err != nil {
		return Fixture{}, err
	}
	res, err := p.Result(result, o.id)
	if err != nil {
		return Fixture{}, err
	}
	return Fixture{Preset: p.Name(), Call: call, Result: res, Delay: o.delay}, nil
}

// Failure returns a fixture in which the call with args fails with toolErr.
func (p Preset[A, R]) Failure(args A, toolErr ToolError, opts ...FixtureOption) (Fixture, error) {
	o, err := p.options(opts)
	if err != nil {
		return Fixture{}, err
	}
	call, err := p.Call(args, o.id)
	if err != nil {
		return Fixture{}, err
	}
	res, err := p.Error(toolErr, o.id)
	if err != nil {
		return Fixture{}, err
	}
	return Fixture{Preset: p.Name(), Call: call, Result: res, Delay: o.delay}, nil
}

// ParseArguments validates raw call arguments and decodes them.
func (p Preset[A, R]) ParseArguments(raw []byte) (A, error) {
	var args A
	canon, err := p.check(partArguments, raw)
	if err != nil {
		return args, err
	}
	if err := json.Unmarshal(canon, &args); err != nil {
		return args, fmt.Errorf("presets: %s arguments: %w", p.Name(), err)
	}
	return args, nil
}

// ParseResult validates a raw successful result and decodes it.
func (p Preset[A, R]) ParseResult(raw []byte) (R, error) {
	var result R
	canon, err := p.check(partResult, raw)
	if err != nil {
		return result, err
	}
	if err := json.Unmarshal(canon, &result); err != nil {
		return result, fmt.Errorf("presets: %s result: %w", p.Name(), err)
	}
	return result, nil
}

// checker is implemented by payload types with rules a schema cannot state.
type checker interface {
	check() []Violation
}

// encode marshals v, validates it against one of the schemas and returns
// its canonical form.
func (d Descriptor) encode(part int, v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, invalid(partSentinels[part], d.Name(), partNames[part],
			Violation{Rule: "json", Message: err.Error()})
	}
	canon, err := d.check(part, raw)
	if err != nil {
		return nil, err
	}
	if c, ok := v.(checker); ok {
		if vs := c.check(); len(vs) > 0 {
			return nil, invalid(partSentinels[part], d.Name(), partNames[part], vs...)
		}
	}
	return canon, nil
}

// id returns the default id for "", or id itself if it is valid.
func (d Descriptor) id(id, part, path string) (string, error) {
	if id == "" {
		return d.DefaultID(), nil
	}
	if v, ok := checkID(id); !ok {
		v.Path = path
		return "", invalid(ErrInvalidID, d.Name(), part, v)
	}
	return id, nil
}

// checkID applies the id rules; the returned violation has no path.
func checkID(id string) (Violation, bool) {
	if strings.TrimSpace(id) == "" {
		return Violation{Rule: "nonblank", Message: "must not be blank"}, false
	}
	if n := utf8.RuneCountInString(id); n > MaxIDLength {
		return Violation{Rule: "maxLength", Message: fmt.Sprintf("must be at most %d characters, got %d", MaxIDLength, n)}, false
	}
	return Violation{}, true
}

// CheckTurn checks the calls a model made in one turn: every id valid
// (ErrInvalidID) and no id used twice (ErrDuplicateID). Paths in the error
// point into calls, as in /1/id.
func CheckTurn(calls []wire.ToolCall) error {
	seen := make(map[string]int, len(calls))
	for i, c := range calls {
		at := "/" + strconv.Itoa(i) + "/id"
		if v, ok := checkID(c.ID); !ok {
			v.Path = at
			return invalid(ErrInvalidID, c.Name, "turn", v)
		}
		if j, dup := seen[c.ID]; dup {
			return invalid(ErrDuplicateID, c.Name, "turn", Violation{
				Path:    at,
				Rule:    "unique",
				Message: fmt.Sprintf("%q is already the id of call %d", c.ID, j),
			})
		}
		seen[c.ID] = i
	}
	return nil
}

// Fixture is a scripted tool round: the call a model makes and the result
// the tool gives, with an optional delay before the result. The delay is
// metadata for whoever serves the fixture; this package never sleeps.
type Fixture struct {
	Preset string
	Call   wire.ToolCall
	Result wire.ToolResult
	Delay  time.Duration
}

// FixtureOption changes how Success and Failure build a fixture.
type FixtureOption func(*fixtureOptions)

type fixtureOptions struct {
	id    string
	idSet bool
	delay time.Duration
}

// WithID gives the fixture's call and result this id instead of the
// default. The id must not be blank — not even empty — and must be at most
// MaxIDLength characters.
func WithID(id string) FixtureOption {
	return func(o *fixtureOptions) { o.id, o.idSet = id, true }
}

// WithDelay records how long the tool takes to answer. It must not be
// negative.
func WithDelay(d time.Duration) FixtureOption {
	return func(o *fixtureOptions) { o.delay = d }
}

func (d Descriptor) options(opts []FixtureOption) (fixtureOptions, error) {
	var o fixtureOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.idSet && o.id == "" {
		return o, invalid(ErrInvalidID, d.Name(), "call", Violation{Path: "/id", Rule: "nonblank", Message: "must not be blank"})
	}
	if o.delay < 0 {
		return o, invalid(ErrInvalidDelay, d.Name(), "fixture", Violation{Path: "/delay", Rule: "minimum", Message: "must be >= 0, got " + o.delay.String()})
	}
	return o, nil
}

// Validate checks a fixture as a whole, for one read back from storage:
// the preset exists, the call and result belong to it and to each other,
// the id is valid, the arguments and the result (or error envelope) satisfy
// the schemas, and the delay is not negative.
func (f Fixture) Validate() error {
	d, ok := Lookup(f.Preset)
	if !ok {
		return fmt.Errorf("presets: fixture: %q: %w", f.Preset, ErrUnknownPreset)
	}
	if f.Call.Name != f.Preset {
		return invalid(ErrUnknownPreset, f.Preset, "fixture", Violation{Path: "/call/name", Rule: "const", Message: fmt.Sprintf("must be %q, got %q", f.Preset, f.Call.Name)})
	}
	if f.Result.Name != f.Preset {
		return invalid(ErrUnknownPreset, f.Preset, "fixture", Violation{Path: "/result/name", Rule: "const", Message: fmt.Sprintf("must be %q, got %q", f.Preset, f.Result.Name)})
	}
	if v, ok := checkID(f.Call.ID); !ok {
		v.Path = "/call/id"
		return invalid(ErrInvalidID, f.Preset, "fixture", v)
	}
	if f.Result.CallID != f.Call.ID {
		return invalid(ErrInvalidID, f.Preset, "fixture", Violation{Path: "/result/callId", Rule: "const", Message: fmt.Sprintf("must be the call id %q, got %q", f.Call.ID, f.Result.CallID)})
	}
	if f.Delay < 0 {
		return invalid(ErrInvalidDelay, f.Preset, "fixture", Violation{Path: "/delay", Rule: "minimum", Message: "must be >= 0, got " + f.Delay.String()})
	}
	if err := d.ValidateArguments(f.Call.Arguments); err != nil {
		return err
	}
	if f.Result.IsError {
		return d.ValidateError(f.Result.Content)
	}
	return d.ValidateResult(f.Result.Content)
}

// fixtureJSON is the stored form of a Fixture; the delay is a Go duration
// string such as "20ms".
type fixtureJSON struct {
	Preset string     `json:"preset"`
	Call   callJSON   `json:"call"`
	Result resultJSON `json:"result"`
	Delay  string     `json:"delay,omitempty"`
}

// MarshalJSON writes {"preset","call","result","delay"}, the delay omitted
// when zero.
func (f Fixture) MarshalJSON() ([]byte, error) {
	out := fixtureJSON{Preset: f.Preset, Call: callOf(f.Call), Result: resultOf(f.Result)}
	if f.Delay != 0 {
		out.Delay = f.Delay.String()
	}
	return marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes. It does not validate; call
// Validate for that.
func (f *Fixture) UnmarshalJSON(b []byte) error {
	var in fixtureJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	var delay time.Duration
	if in.Delay != "" {
		d, err := time.ParseDuration(in.Delay)
		if err != nil {
			return fmt.Errorf("presets: fixture delay: %w", err)
		}
		delay = d
	}
	*f = Fixture{Preset: in.Preset, Call: in.Call.call(), Result: in.Result.result(), Delay: delay}
	return nil
}

// callJSON is the stored form of a call in a fixture:
// {"id","name","arguments"}, the arguments as canonical JSON.
type callJSON struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// callOf is the stored form of a call.
func callOf(c wire.ToolCall) callJSON {
	return callJSON{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
}

// call is the call a stored form holds.
func (c callJSON) call() wire.ToolCall {
	return wire.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
}

// UnmarshalJSON decodes a call and brings its arguments back to canonical
// form, which a JSON encoder's HTML escaping may have changed.
func (c *callJSON) UnmarshalJSON(b []byte) error {
	type plain callJSON
	var in plain
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	args, err := canonicalRaw(in.Arguments)
	if err != nil {
		return fmt.Errorf("presets: call arguments: %w", err)
	}
	in.Arguments = args
	*c = callJSON(in)
	return nil
}

// resultJSON is the stored form of a result in a fixture:
// {"callId","name","content","isError"}, the content as canonical JSON.
type resultJSON struct {
	CallID  string          `json:"callId"`
	Name    string          `json:"name"`
	Content json.RawMessage `json:"content"`
	IsError bool            `json:"isError"`
}

// resultOf is the stored form of a result.
func resultOf(r wire.ToolResult) resultJSON {
	return resultJSON{CallID: r.CallID, Name: r.Name, Content: r.Content, IsError: r.IsError}
}

// result is the result a stored form holds.
func (r resultJSON) result() wire.ToolResult {
	return wire.ToolResult{CallID: r.CallID, Name: r.Name, Content: r.Content, IsError: r.IsError}
}

// UnmarshalJSON decodes a result and brings its content back to canonical
// form, which a JSON encoder's HTML escaping may have changed.
func (r *resultJSON) UnmarshalJSON(b []byte) error {
	type plain resultJSON
	var in plain
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	content, err := canonicalRaw(in.Content)
	if err != nil {
		return fmt.Errorf("presets: result content: %w", err)
	}
	in.Content = content
	*r = resultJSON(in)
	return nil
}
