package presets

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/wire"
)

// Exchange is one recorded request and response, as substitution sees it:
// provider bodies and nothing else.
type Exchange struct {
	// ID names the interaction in reports.
	ID uint64
	// Kind is the API kind; Path the upstream-relative request path (Gemini
	// names its model there, Ollama tells /api/chat from /api/generate).
	Kind wire.Kind
	Path string
	// Request is the request body.
	Request []byte
	// Status is the response's HTTP status; only 2xx responses are read for
	// tool calls.
	Status int
	// Framing is the framing of a streamed response, FramingNone otherwise.
	Framing wire.Framing
	// Response is the body of a response that is not streamed.
	Response []byte
	// Events are the events of a streamed response, in order; their
	// concatenation is the body.
	Events [][]byte
}

func (x *Exchange) responseBytes() []byte {
	if x.Framing == wire.FramingNone {
		return x.Response
	}
	return bytes.Join(x.Events, nil)
}

// Substituted is one tool call that became a preset fixture.
type Substituted struct {
	// Interaction made the call; ResultFrom is the interaction whose request
	// first answered it.
	Interaction, ResultFrom uint64
	// Function is the tool's name on the wire, Preset the preset it is.
	Function, Preset string
	// OldID is the call's id before (a SyntheticID for an id-less call),
	// NewID its id now.
	OldID, NewID string
	// IsError says the result is the error envelope.
	IsError bool
}

// Skip is a call to a preset's function that was left unchanged.
type Skip struct {
	// Interaction made the call.
	Interaction uint64
	// CallID is the call's id (a SyntheticID for an id-less call).
	CallID string
	// Function is the tool's name on the wire, Preset the preset it maps to.
	Function, Preset string
	// Part is what failed: "arguments", "result", "error", "call" or
	// "response".
	Part string
	// Path locates the fault: a JSON Pointer into the arguments or the
	// result for a schema violation, else the gjson path in a body, or "".
	Path string
	// Reason says what was wrong.
	Reason string
}

func (s Skip) String() string {
	who := s.Function
	if s.Function != s.Preset {
		who = s.Function + " → " + s.Preset
	}
	at := s.Part
	if s.Path != "" {
		at += " " + s.Path
	}
	return fmt.Sprintf("interaction %d, call %s (%s): %s: %s", s.Interaction, s.CallID, who, at, s.Reason)
}

// Report says what a substitution did.
type Report struct {
	// Substituted lists the calls that became fixtures, in cassette order.
	Substituted []Substituted
	// Skipped lists the calls to presets' functions left unchanged, in
	// cassette order.
	Skipped []Skip
}

// Counts returns the number of calls substituted per preset.
func (r Report) Counts() map[string]int {
	out := map[string]int{}
	for _, s := range r.Substituted {
		out[s.Preset]++
	}
	return out
}

// Substitution is the outcome of Substitute.
type Substitution struct {
	// Exchanges are the input exchanges rewritten, in the same order, each
	// streamed response with the same number of events.
	Exchanges []Exchange
	// Fixtures are the stored fixtures (CassetteFixture JSON) by call id.
	Fixtures map[string][]byte
	// Report lists what was substituted and what was left alone.
	Report Report
}

// Substituter turns the recorded tool rounds of a cassette into preset
// fixtures. The zero value substitutes calls whose function name is a
// preset's; Map adds application tools.
type Substituter struct {
	// Map maps an application's tool name to a preset's function name
	// (--map get_weather=weather). It takes precedence over the tool's own
	// name.
	Map map[string]string
}

// ParseMapping reads TOOL=PRESET mappings. A spec without '=', with an empty
// tool, or mapping a tool twice wraps ErrBadMapping; an unknown preset wraps
// ErrUnknownPreset. Both errors name the known presets.
func ParseMapping(specs []string) (map[string]string, error) {
	out := make(map[string]string, len(specs))
	for _, spec := range specs {
		tool, preset, ok := strings.Cut(spec, "=")
		tool, preset = strings.TrimSpace(tool), strings.TrimSpace(preset)
		switch {
		case !ok || tool == "":
			return nil, fmt.Errorf("presets: mapping %q: %w: want TOOL=PRESET, PRESET one of %s", spec, ErrBadMapping, knownPresets())
		case out[tool] != "" && out[tool] != preset:
			return nil, fmt.Errorf("presets: mapping %q: %w: %s is already mapped to %s", spec, ErrBadMapping, tool, out[tool])
		}
		if _, known := Lookup(preset); !known {
			return nil, fmt.Errorf("presets: mapping %q: %w %q: the presets are %s", spec, ErrUnknownPreset, preset, knownPresets())
		}
		out[tool] = preset
	}
	return out, nil
}

func knownPresets() string {
	var names []string
	for _, d := range All() {
		names = append(names, d.Name())
	}
	return strings.Join(names, ", ")
}

// preset returns the preset a tool name stands for.
func (s *Substituter) preset(function string) (Descriptor, bool) {
	if p, ok := s.Map[function]; ok {
		return Lookup(p)
	}
	return Lookup(function)
}

// Substitute rewrites the tool rounds of a cassette's exchanges, given in
// recorded order, into preset fixtures (SPEC §6, "Substitution"):
//
//   - Each tool call a 2xx response makes to a preset's function (or to a
//     tool mapped to one) is checked against the preset's argument schema.
//   - Its result is taken from the first later request that answers it, and
//     checked against the result schema, or the error envelope's when the
//     wire flags an error or the result is the envelope.
//   - A call that passes gets the id call_<preset>, then call_<preset>_2, …
//     in cassette order, skipping ids that calls left alone still use. The
//     new id replaces the old one in the response that made the call
//     (stream events included, each keeping its place) and in every later
//     request that echoes or answers it; an id-less Gemini or Ollama call
//     gets the id added, and so do its echoes. Every result answering it
//     becomes the fixture's canonical JSON, carried the way the application
//     sent it.
//   - A call that fails a check is left unchanged and reported as a Skip.
//
// Each rewritten request is what the application will send in replay once
// it gets the rewritten responses: ids change where they are, and are added
// only where the application is expected to send them back. An id-less
// Gemini functionResponse gets its call's id (the Gemini docs ask the
// application to send it). An Ollama tool message without tool_call_id
// keeps answering by tool_name: that is how Ollama documents the client,
// and such a client does not start sending ids when the calls carry them.
// An Ollama call that had an id but is echoed without it stays so in the
// echo: that client drops ids.
//
// A later request echoes a call made by an earlier response when it carries
// the call's id and, if several responses made calls with that id, its
// conversation continues that response's request (its turns start with
// them); id-less calls, and Ollama calls echoed without their ids, are
// linked by the conversation alone. A result with
// an id answers the call with that id. A result without one answers by its
// function name: for Ollama, the earliest call to that function echoed in
// an earlier turn of the request and not yet answered there, with or
// without id; for Gemini, the n-th id-less call to it (wire.SyntheticID).
//
// Substitute is deterministic and idempotent: substituting its own output
// gives the same exchanges and fixtures. The input is not modified. An error
// is returned only when a rewrite the checks allowed fails, which means a
// body changed under it; nothing is then returned.
func (s *Substituter) Substitute(in []Exchange) (*Substitution, error) {
	for tool, p := range s.Map {
		if _, ok := Lookup(p); !ok {
			return nil, fmt.Errorf("presets: mapping %s=%s: %w", tool, p, ErrUnknownPreset)
		}
	}
	st := &subst{s: s, xs: make([]exchangeState, len(in))}
	for i := range in {
		st.xs[i].Exchange = clone(in[i])
	}
	st.read()
	st.link()
	st.check()
	st.trial()
	st.number()
	out, err := st.rewrite()
	if err != nil {
		return nil, err
	}
	out.Report = st.report()
	return out, nil
}

func clone(x Exchange) Exchange {
	x.Request = bytes.Clone(x.Request)
	x.Response = bytes.Clone(x.Response)
	if x.Events != nil {
		evs := make([][]byte, len(x.Events))
		for i, e := range x.Events {
			evs[i] = bytes.Clone(e)
		}
		x.Events = evs
	}
	return x
}

// exchangeState is an exchange with what was read from it.
type exchangeState struct {
	Exchange
	req     wire.Request
	reqOK   bool
	resp    wire.Response
	turns   []string         // canonical JSON of each request turn, built on demand
	calls   []*call          // the preset calls its response made
	links   map[string]*call // echoed calls (and results' ids) by id or SyntheticID
	answers []answer         // this request's results that answer preset calls
}

// answer is a tool result in a request and the preset call it answers.
type answer struct {
	c *call
	r wire.ToolResult
}

// call is one tool call to a preset's function made by a response.
type call struct {
	x        int // exchange index
	k        int // index among the response's tool calls
	id       string
	key      string // id, or SyntheticID within the response
	function string
	preset   Descriptor
	args     []byte // canonical, once valid
	results  []resultAt
	skip     *Skip
	isError  bool
	output   []byte // canonical output for the fixture
	newID    string
}

type resultAt struct {
	x int
	r wire.ToolResult
}

type subst struct {
	s     *Substituter
	xs    []exchangeState
	calls []*call
	byID  map[string][]*call
}

func (st *subst) skip(c *call, part, path, reason string) {
	if c.skip == nil {
		c.skip = &Skip{Interaction: st.xs[c.x].ID, CallID: c.key, Function: c.function, Preset: c.preset.Name(), Part: part, Path: path, Reason: reason}
	}
}

// skipValidation records a schema failure with its first violation's path.
func (st *subst) skipValidation(c *call, part string, err error) {
	var ve *ValidationError
	if errors.As(err, &ve) && len(ve.Violations) > 0 {
		// The first violation's path is the Skip's; the others say theirs.
		msgs := make([]string, len(ve.Violations))
		for i, v := range ve.Violations {
			msgs[i] = v.String()
		}
		first := ve.Violations[0]
		first.Path = ""
		msgs[0] = first.String()
		st.skip(c, ve.Part, ve.Violations[0].Path, strings.Join(msgs, "; "))
		return
	}
	st.skip(c, part, "", err.Error())
}

// read parses every exchange and collects the preset calls.
func (st *subst) read() {
	st.byID = map[string][]*call{}
	for i := range st.xs {
		x := &st.xs[i]
		switch x.Kind {
		case wire.KindOpenAIChat, wire.KindOpenAIResponses, wire.KindAnthropicMessages, wire.KindGemini, wire.KindOllama:
		default:
			continue
		}
		if req, err := wire.ParseRequest(x.Kind, x.Path, x.Request); err == nil {
			x.req, x.reqOK = req, true
		}
		if x.Status < 200 || x.Status > 299 {
			continue
		}
		resp, err := wire.ParseResponse(x.Kind, x.Framing, x.responseBytes())
		x.resp = resp
		idless := map[string]int{}
		for k, tc := range resp.ToolCalls {
			c := &call{x: i, k: k, id: tc.ID, key: tc.ID, function: tc.Name}
			if tc.ID == "" {
				idless[tc.Name]++
				c.key = wire.SyntheticID(tc.Name, idless[tc.Name])
			}
			d, ok := st.s.preset(tc.Name)
			if !ok {
				continue
			}
			c.preset = d
			st.calls = append(st.calls, c)
			x.calls = append(x.calls, c)
			if c.id != "" {
				st.byID[c.id] = append(st.byID[c.id], c)
			}
			switch {
			case err != nil:
				st.skip(c, "response", "", "the response is not readable: "+err.Error())
			case tc.ID == "" && x.Kind != wire.KindGemini && x.Kind != wire.KindOllama:
				st.skip(c, "call", "", "the call carries no id")
			default:
				if verr := d.ValidateArguments(tc.Arguments); verr != nil {
					st.skipValidation(c, "arguments", verr)
				} else {
					c.args, _ = Canonical(tc.Arguments)
				}
			}
		}
	}
}

// turnsOf returns the canonical JSON of each turn of a request.
func (st *subst) turnsOf(x *exchangeState) []string {
	if x.turns == nil && x.reqOK {
		x.turns = make([]string, 0, len(x.req.Turns))
		for _, t := range x.req.Turns {
			raw := gjson.GetBytes(x.Request, t.Path).Raw
			canon, err := Canonical([]byte(raw))
			if err != nil {
				canon = []byte(raw)
			}
			x.turns = append(x.turns, string(canon))
		}
	}
	return x.turns
}

// continues reports whether request j's conversation continues request i's:
// j's turns start with all of i's.
func (st *subst) continues(j, i int) bool {
	tj, ti := st.turnsOf(&st.xs[j]), st.turnsOf(&st.xs[i])
	return len(ti) > 0 && len(tj) > len(ti) && slices.Equal(tj[:len(ti)], ti)
}

// owner finds the call an id in request j refers to.
func (st *subst) owner(j int, id string) *call {
	var latest *call
	cands := st.byID[id]
	for n := len(cands) - 1; n >= 0; n-- {
		c := cands[n]
		if c.x >= j {
			continue
		}
		if latest == nil {
			latest = c
		}
		if len(cands) == 1 || st.continues(j, c.x) {
			return c
		}
	}
	return latest
}

// echoes reports whether request j continues request i's conversation and
// echoes the calls of i's response, which it then holds from index off of
// its tool calls, right after the calls request i held.
func (st *subst) echoes(j, i int) (off int, ok bool) {
	if !st.continues(j, i) {
		return 0, false
	}
	off = len(st.xs[i].req.ToolCalls)
	made, echoed := st.xs[i].resp.ToolCalls, st.xs[j].req.ToolCalls
	if off+len(made) > len(echoed) {
		return 0, false
	}
	for q, tc := range made {
		if echoed[off+q].Name != tc.Name {
			return 0, false
		}
	}
	return off, true
}

// echoedBare reports whether a later request may echo call c without an
// id and still be linked to it: an id-less call, or an Ollama call, whose id
// clients may drop (the Ollama docs show histories without ids, and an
// ollama-python whose ToolCall has no id field drops it).
func (st *subst) echoedBare(c *call) bool {
	return c.id == "" || st.xs[c.x].Kind == wire.KindOllama
}

// link finds, in each request, the preset calls it echoes and answers.
func (st *subst) link() {
	bare := []int{} // exchanges with calls a later request may echo without ids
	for j := range st.xs {
		x := &st.xs[j]
		if x.reqOK && (len(x.req.ToolCalls) > 0 || len(x.req.ToolResults) > 0) {
			x.links = map[string]*call{}
			// Calls echoed without ids: a conversation that continues an
			// earlier request carries that response's calls right after the
			// calls the earlier request held.
			pos := map[int]*call{}
			for n := len(bare) - 1; n >= 0; n-- {
				i := bare[n]
				off, ok := st.echoes(j, i)
				if !ok {
					continue
				}
				for _, c := range st.xs[i].calls {
					if st.echoedBare(c) && x.req.ToolCalls[off+c.k].ID == "" && pos[off+c.k] == nil {
						pos[off+c.k] = c
					}
				}
			}
			// keys[p] is the key of echoed call p: its id, or its
			// SyntheticID among the request's id-less calls.
			keys := make([]string, len(x.req.ToolCalls))
			idless := map[string]int{}
			for p, tc := range x.req.ToolCalls {
				if tc.ID != "" {
					keys[p] = tc.ID
					if c := st.owner(j, tc.ID); c != nil {
						x.links[tc.ID] = c
					}
					continue
				}
				idless[tc.Name]++
				keys[p] = wire.SyntheticID(tc.Name, idless[tc.Name])
				if c := pos[p]; c != nil {
					x.links[keys[p]] = c
				}
			}
			st.linkResults(j, keys)
		}
		for _, c := range x.calls {
			if st.echoedBare(c) {
				bare = append(bare, j)
				break
			}
		}
	}
}

// linkResults pairs the tool results of request j with the preset calls
// they answer; keys are the keys of the request's echoed calls.
//
// A result with an id answers the call with that id. One without answers by
// function name. An Ollama tool message names its function (tool_name) and
// the documented client sends nothing else, whether the call had an id or
// not, so it answers the earliest call to that function echoed in an
// earlier turn that no result answers yet: the results carrying ids are
// counted first, then the others in order. A Gemini functionResponse
// without id answers the n-th id-less call to its function, by its
// wire.SyntheticID, the pairing wire.RewriteCallIDs keeps when it gives
// both the call's id.
func (st *subst) linkResults(j int, keys []string) {
	x := &st.xs[j]
	calls := x.req.ToolCalls
	answered := make([]bool, len(calls))
	for _, r := range x.req.ToolResults {
		if r.CallID == "" {
			continue
		}
		for p, tc := range calls {
			if !answered[p] && tc.ID == r.CallID {
				answered[p] = true
				break
			}
		}
	}
	idless := map[string]int{}
	for _, r := range x.req.ToolResults {
		var c *call
		switch {
		case r.CallID != "":
			if x.links[r.CallID] == nil {
				if o := st.owner(j, r.CallID); o != nil {
					x.links[r.CallID] = o
				}
			}
			c = x.links[r.CallID]
		case x.Kind == wire.KindOllama:
			at := turnOf(r.Path)
			for p, tc := range calls {
				if !answered[p] && tc.Name == r.Name && turnOf(tc.Path) < at {
					answered[p] = true
					c = x.links[keys[p]]
					break
				}
			}
		default:
			idless[r.Name]++
			c = x.links[wire.SyntheticID(r.Name, idless[r.Name])]
		}
		if c != nil {
			x.answers = append(x.answers, answer{c: c, r: r})
			c.results = append(c.results, resultAt{x: j, r: r})
		}
	}
}

// turnOf returns the index of the turn a request path is in: 3 for
// "messages.3.content" or "messages.3.tool_calls.0", or -1.
func turnOf(path string) int {
	_, rest, ok := strings.Cut(path, ".")
	if !ok {
		return -1
	}
	idx, _, _ := strings.Cut(rest, ".")
	n, err := strconv.Atoi(idx)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// check validates the result of each call still in the running.
func (st *subst) check() {
	for _, c := range st.calls {
		if c.skip != nil {
			continue
		}
		if len(c.results) == 0 {
			st.skip(c, "result", "", "no later request in the cassette answers it")
			continue
		}
		first := c.results[0]
		kind := st.xs[first.x].Kind
		out, _, err := toolOutput(kind, first.r.Content)
		if err != nil {
			st.skip(c, "result", first.r.Path, fmt.Sprintf("interaction %d: %v", st.xs[first.x].ID, err))
			continue
		}
		canon, err := Canonical(out)
		if err != nil {
			st.skip(c, "result", first.r.Path, fmt.Sprintf("interaction %d: the tool output is not JSON: %s", st.xs[first.x].ID, shorten(string(out), 60)))
			continue
		}
		isError := first.r.IsError || c.preset.ValidateError(canon) == nil
		if isError {
			err = c.preset.ValidateError(canon)
		} else {
			err = c.preset.ValidateResult(canon)
		}
		if err != nil {
			st.skipValidation(c, "result", err)
			continue
		}
		for _, r := range c.results[1:] {
			if _, _, err := toolOutput(st.xs[r.x].Kind, r.r.Content); err != nil {
				st.skip(c, "result", r.r.Path, fmt.Sprintf("interaction %d: %v", st.xs[r.x].ID, err))
				break
			}
		}
		c.output, c.isError = canon, isError
	}
}

// trial rewrites each response with stand-in ids and leaves alone the calls
// of a response that would not stay the same stream.
func (st *subst) trial() {
	for i := range st.xs {
		x := &st.xs[i]
		ids := map[string]string{}
		for _, c := range x.calls {
			if c.skip == nil {
				ids[c.key] = c.preset.DefaultID() + "_" + strconv.Itoa(c.k+1)
			}
		}
		if len(ids) == 0 {
			continue
		}
		if _, err := st.rewriteResponse(x, ids); err != nil {
			for _, c := range x.calls {
				st.skip(c, "response", "", err.Error())
			}
		}
	}
}

// number gives the substituted calls their ids.
func (st *subst) number() {
	reserved := map[string]bool{}
	for _, x := range st.xs {
		for _, tc := range x.resp.ToolCalls {
			reserved[tc.ID] = true
		}
	}
	for _, c := range st.calls {
		if c.skip == nil {
			delete(reserved, c.id)
		}
	}
	for _, c := range st.calls {
		if c.skip != nil {
			reserved[c.id] = true
		}
	}
	for _, x := range st.xs {
		for _, tc := range x.req.ToolCalls {
			if c := x.links[tc.ID]; c == nil || c.skip != nil {
				reserved[tc.ID] = true
			}
		}
	}
	delete(reserved, "")
	next := map[string]int{}
	for _, c := range st.calls {
		if c.skip != nil {
			continue
		}
		base := c.preset.DefaultID()
		for {
			next[base]++
			id := base
			if n := next[base]; n > 1 {
				id = base + "_" + strconv.Itoa(n)
			}
			if !reserved[id] {
				c.newID = id
				reserved[id] = true
				break
			}
		}
	}
}

// rewriteResponse renames call ids in an exchange's response, keeping a
// stream's events.
func (st *subst) rewriteResponse(x *exchangeState, ids map[string]string) (Exchange, error) {
	out := x.Exchange
	body, err := wire.RewriteCallIDs(x.Kind, x.Framing, x.responseBytes(), ids)
	if err != nil {
		return out, fmt.Errorf("interaction %d: response: %w", x.ID, err)
	}
	if x.Framing == wire.FramingNone {
		out.Response = body
		return out, nil
	}
	evs := wire.Split(x.Framing, body)
	if len(evs) != len(x.Events) {
		return out, fmt.Errorf("interaction %d: response: the rewritten stream has %d events, the recorded one %d", x.ID, len(evs), len(x.Events))
	}
	out.Events = make([][]byte, len(evs))
	for n, e := range evs {
		out.Events[n] = e.Raw
	}
	return out, nil
}

// rewrite builds the substituted exchanges and the fixtures.
func (st *subst) rewrite() (*Substitution, error) {
	out := &Substitution{Exchanges: make([]Exchange, len(st.xs)), Fixtures: map[string][]byte{}}
	for i := range st.xs {
		x := &st.xs[i]
		ex := x.Exchange
		ids := map[string]string{}
		for _, c := range x.calls {
			if c.newID != "" {
				ids[c.key] = c.newID
			}
		}
		if len(ids) > 0 {
			var err error
			if ex, err = st.rewriteResponse(x, ids); err != nil {
				return nil, err
			}
		}
		req, err := st.rewriteRequest(x)
		if err != nil {
			return nil, err
		}
		ex.Request = req
		out.Exchanges[i] = ex
	}
	for _, c := range st.calls {
		if c.newID == "" {
			continue
		}
		f := CassetteFixture{Fixture: Fixture{
			Preset: c.preset.Name(),
			Call:   ToolCall{ID: c.newID, Name: c.preset.Name(), Arguments: c.args},
			Result: ToolResult{CallID: c.newID, Name: c.preset.Name(), Content: c.output, IsError: c.isError},
		}, Function: c.function}
		if err := f.Validate(); err != nil {
			return nil, fmt.Errorf("presets: fixture %s: %w", c.newID, err)
		}
		raw, err := f.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("presets: fixture %s: %w", c.newID, err)
		}
		out.Fixtures[c.newID] = raw
	}
	return out, nil
}

// rewriteRequest renames the substituted calls' ids in a request and sets
// their results to the fixtures' output.
func (st *subst) rewriteRequest(x *exchangeState) ([]byte, error) {
	ids := map[string]string{}
	for key, c := range x.links {
		// An echo without the id its call had stays so: the client
		// drops ids and will drop the new one too.
		if c.newID != "" && (c.id == "" || key == c.id) {
			ids[key] = c.newID
		}
	}
	body := x.Request
	if len(ids) > 0 {
		var err error
		if body, err = wire.RewriteCallIDs(x.Kind, wire.FramingNone, body, ids); err != nil {
			return nil, fmt.Errorf("interaction %d: request: %w", x.ID, err)
		}
	}
	// Renaming ids moves no turn, part or block: the results' paths hold.
	for _, a := range x.answers {
		if a.c.newID == "" {
			continue
		}
		_, sh, err := toolOutput(x.Kind, a.r.Content)
		if err != nil {
			return nil, fmt.Errorf("interaction %d: request: %s: %w", x.ID, a.r.Path, err)
		}
		if body, err = setOutput(body, a.r.Path, sh, a.c.output); err != nil {
			return nil, fmt.Errorf("interaction %d: request: %w", x.ID, err)
		}
	}
	return body, nil
}

// report lists the outcome in cassette order.
func (st *subst) report() Report {
	var r Report
	for _, c := range st.calls {
		if c.skip != nil {
			r.Skipped = append(r.Skipped, *c.skip)
			continue
		}
		r.Substituted = append(r.Substituted, Substituted{
			Interaction: st.xs[c.x].ID, ResultFrom: st.xs[c.results[0].x].ID,
			Function: c.function, Preset: c.preset.Name(),
			OldID: c.key, NewID: c.newID, IsError: c.isError,
		})
	}
	return r
}
