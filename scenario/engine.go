package scenario

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/llmproxy/llmproxy/wire"
)

const (
	// MaxConversations bounds the named conversations one Engine keeps, and
	// the answers it remembers for requests that read their position from
	// themselves; past it the least recently used is forgotten.
	MaxConversations = 10000
	// MaxConversationName bounds the length in bytes of a conversation's
	// name; a longer one is ErrConversationName.
	MaxConversationName = 256
	// DefaultModel is the model named in answers when neither the request
	// nor the scenario names one.
	DefaultModel = "llmproxy-scenario"
	// rememberCalls bounds the calls a conversation remembers for requests
	// that name a call only by its id.
	rememberCalls = 1024
)

// DefaultCreated is the creation time of every answer that gives none:
// 1700000000 seconds after the Unix epoch.
var DefaultCreated = time.Unix(1700000000, 0).UTC()

// Engine answers requests from a scenario. Each conversation keeps its own
// position; conversations are independent and may be served in parallel.
// An Engine is safe for concurrent use.
type Engine struct {
	prog  *program
	model *Scenario // as given, for Scenario

	convs *lru[*conversation] // named conversations, by name

	// silent holds, by request key, where a request's conversation stands
	// after answers that leave no trace in a later request (errors, cut
	// streams); byID, by response id, where a conversation stands after an
	// answer, for requests that continue one by its id.
	silent *lru[*conversation]
	byID   *lru[[]*conversation]

	reached stepCounts // answers committed, by step

	schemas schemaCache // the schemas of json answers' requests
}

// conversation is one conversation's position.
type conversation struct {
	mu       sync.Mutex // held while a named conversation answers
	name     string
	last     int            // step last answered; -1 before the first answer
	answers  int            // answers delivered, counting from 0
	defaults map[string]int // nil until an answer makes a call
	calls    callMemory
}

func newConversation(name string) *conversation {
	return &conversation{name: name, last: -1}
}

// NewEngine checks a scenario and returns an engine that serves it. An
// invalid scenario is an ErrorList.
func NewEngine(s *Scenario) (*Engine, error) {
	prog, errs := compile(s.clone())
	if errs != nil {
		return nil, errs.sorted()
	}
	return &Engine{
		prog: prog, model: s.clone(), reached: newStepCounts(len(prog.steps)),
		convs: newLRU[*conversation](MaxConversations), silent: newLRU[*conversation](MaxConversations),
		byID: newLRU[[]*conversation](MaxConversations),
	}, nil
}

// Name returns the scenario's name.
func (e *Engine) Name() string { return e.prog.name }

// Request is a request as the engine reads it.
type Request struct {
	// Conversation names a conversation the engine keeps (the
	// X-Llmproxy-Conversation header); "" reads the conversation's position
	// from the request itself (see the package doc).
	Conversation string
	// Parsed is the body as wire.ParseRequest reads it; its Kind is the
	// request's API kind.
	Parsed wire.Request
	// Body is the body as sent, for json conditions and the default usage.
	Body []byte
}

// Pending is an answer not yet delivered. The server delivers its
// Delivery, then calls Commit; only then does the conversation move on. An
// answer that is never committed (the client went away) changes nothing.
type Pending struct {
	Delivery

	e        *Engine
	conv     *conversation
	named    bool     // conv is a named conversation, shared
	key      [32]byte // the request's key, for a conversation read from it that a silent step answers
	kind     wire.Kind
	step     int
	calls    []wire.ToolCall
	defaults []nameCount // the default-id counts once this answer is delivered
	once     sync.Once
}

// Answer finds the step that answers req and returns its answer, pending.
// When no step answers, the error is a *Miss wrapping ErrMiss and nothing
// changes.
func (e *Engine) Answer(req Request) (*Pending, error) {
	v := newView(&req.Parsed, req.Body)
	if req.Conversation == "" {
		return e.answerRead(&req, v)
	}
	conv, err := e.conversation(req.Conversation)
	if err != nil {
		return nil, err
	}
	conv.mu.Lock()
	defer conv.mu.Unlock()
	v.conv = conv
	step, miss := e.pick(conv, v)
	if miss != nil {
		return nil, miss
	}
	pend, miss := e.prepare(conv, step, &req)
	if miss != nil {
		return nil, miss
	}
	pend.named = true
	return pend, nil
}

// answerRead answers a request whose conversation is read from the request.
func (e *Engine) answerRead(req *Request, v *view) (*Pending, error) {
	conv, kept, miss := e.locate(req, v)
	if miss != nil {
		return nil, miss
	}
	v.conv = conv
	step, miss := e.pick(conv, v)
	if miss != nil {
		miss.Position = conv.describe(e.prog)
		if (kept || miss.Reason != "") && miss.Note == "" {
			miss.Note = sameHistory
			if kept {
				miss.Note = "a request with these very bytes was answered before by an error or a cut stream, and this one goes on from there; " + sameHistory
			}
		}
		return nil, miss
	}
	p, miss := e.prepare(conv, step, req)
	if miss != nil {
		return nil, miss
	}
	if e.prog.steps[step].silent {
		p.key = RequestKey(req.Body)
	}
	return p, nil
}

// sameHistory is the advice of a miss that may come from two conversations
// mock cannot tell apart.
const sameHistory = "requests that carry the same history are one conversation: where two must get different answers, name each with the X-Llmproxy-Conversation header"

// conversation returns the named conversation, creating it on first use and
// forgetting the least recently used past MaxConversations.
func (e *Engine) conversation(name string) (*conversation, error) {
	if len(name) > MaxConversationName {
		return nil, fmt.Errorf("scenario %s: conversation %q: %w (%d bytes, at most %d)", e.prog.name, shorten(name, 40), ErrConversationName, len(name), MaxConversationName)
	}
	return e.convs.getOrAdd(name, func() *conversation { return newConversation(name) }), nil
}

// pick returns the step that answers, or the miss. conv is locked or
// private.
func (e *Engine) pick(conv *conversation, v *view) (int, *Miss) {
	p := e.prog
	if p.maxSteps > 0 && conv.answers >= p.maxSteps {
		return -1, &Miss{Scenario: p.name, Conversation: conv.name,
			Reason: fmt.Sprintf("the conversation has had its %d answers (max-steps)", p.maxSteps)}
	}
	var candidates []int
	switch {
	case conv.last < 0:
		candidates = p.startsOf(v)
	case p.steps[conv.last].ended:
		switch p.onExhausted {
		case RepeatLast:
			return conv.last, nil
		case Restart:
			candidates = p.startsOf(v)
		default:
			return -1, &Miss{Scenario: p.name, Conversation: conv.name,
				Reason: fmt.Sprintf("the conversation ended at step %q (on-exhausted: reject)", p.steps[conv.last].id)}
		}
	default:
		candidates = p.steps[conv.last].next
	}
	for _, i := range candidates {
		if _, ok := p.steps[i].holds(v); ok {
			return i, nil
		}
	}
	miss := &Miss{Scenario: p.name, Conversation: conv.name}
	if conv.last < 0 || p.steps[conv.last].ended {
		candidates = p.entries // the index may have left some out: name them all
	}
	for k, i := range candidates {
		if k == maxListed {
			miss.Note = fmt.Sprintf("%d more candidate steps are not listed", len(candidates)-k)
			break
		}
		m, _ := p.steps[i].holds(v)
		miss.Candidates = append(miss.Candidates, m)
	}
	return -1, miss
}

// maxListed bounds the candidate steps a miss lists.
const maxListed = 20

// holds reports whether the step's conditions hold for v; when they do
// not, the miss names the first that failed. The latest-user equals
// condition the step keeps the value of holds when that value is v's.
func (st *cstep) holds(v *view) (CandidateMiss, bool) {
	for k := range st.conds {
		if k == int(st.userEqAt) && v.userFound && v.user == st.userEq {
			continue
		}
		if ok, m := st.conds[k].check(v); !ok {
			m.Step = st.id
			return m, false
		}
	}
	return CandidateMiss{}, true
}

// recall returns a call the conversation's answers made. conv is locked.
func (c *conversation) recall(id string) (rememberedCall, bool) {
	return c.calls.get(id)
}

// prepare builds the pending answer of a step, or the miss of a json
// answer the request's schema refuses. conv is locked or private; nothing
// in it changes until Commit.
func (e *Engine) prepare(conv *conversation, step int, req *Request) (*Pending, *Miss) {
	p := e.prog
	st := &p.steps[step]
	m := st.rest()
	a := &m.answer
	pend := &Pending{e: e, conv: conv, step: step, kind: req.Parsed.Kind}
	d := &pend.Delivery
	d.Scenario, d.Conversation, d.Step = p.name, conv.name, st.id
	d.Delay, d.Stream, d.CutAfter = m.delay, a.Stream, a.CutAfter
	n := conv.answers + 1
	ans := wire.Answer{Model: p.answerModel(req), ID: a.ID, Created: a.Created}
	if ans.ID == "" {
		ans.ID = req.Parsed.Kind.ResponseIDPrefix() + p.name + "-" + strconv.Itoa(n)
	}
	if ans.Created.IsZero() {
		ans.Created = DefaultCreated
	}
	if a.Error != nil {
		errCopy := *a.Error
		d.Error = &errCopy
		d.Answer = ans
		return pend, nil
	}
	ans.Text, ans.Reasoning = st.text, a.Reasoning
	if m.gen != nil {
		ans.Text = m.gen.text(requestText(req, ans.Model))
	}
	calls := m.calls
	if a.JSON != nil {
		out, reason := answerJSON(&e.schemas, a.JSON, req)
		if reason != "" {
			return nil, &Miss{Scenario: p.name, Conversation: conv.name, Reason: fmt.Sprintf("step %q: %s", st.id, reason)}
		}
		ans.Text = out.text
		if out.tool != nil {
			calls = []ccall{*out.tool}
		}
	}
	ans.ToolCalls, pend.defaults = callIDs(calls, conv.defaults)
	pend.calls = ans.ToolCalls
	ans.Finish = a.Finish
	if ans.Finish == "" {
		ans.Finish = wire.FinishStop
		if len(ans.ToolCalls) > 0 {
			ans.Finish = wire.FinishToolCalls
		}
	}
	if a.Usage != nil {
		ans.Usage = *a.Usage
	} else {
		ans.Usage = defaultUsage(req.Body, &ans)
	}
	d.Answer = ans
	for i, c := range m.calls {
		if c.fixture != nil {
			f := c.fixture.Fixture
			f.Call.ID, f.Result.CallID = ans.ToolCalls[i].ID, ans.ToolCalls[i].ID
			f.Call.Name, f.Result.Name = f.Preset, f.Preset
			d.Fixtures = append(d.Fixtures, f)
		}
	}
	return pend, nil
}

// callIDs gives each call its id: its own, else call_<function>, then
// call_<function>_2, … counting the conversation's calls that took a default
// id (defaults, which it does not change), skipping ids the answer's own
// calls took. It also returns the counts of the functions whose calls took
// a default id, once these calls are made.
func callIDs(calls []ccall, defaults map[string]int) ([]wire.ToolCall, []nameCount) {
	if len(calls) == 0 {
		return nil, nil
	}
	out := make([]wire.ToolCall, len(calls))
	var taken map[string]bool // with many calls; few are searched instead
	if len(calls) > fewCalls {
		taken = map[string]bool{}
		for _, c := range calls {
			if c.id != "" {
				taken[c.id] = true
			}
		}
	}
	var counts []nameCount
	for i, c := range calls {
		id := c.id
		for id == "" || (c.id == "" && idTaken(taken, calls, out[:i], id)) {
			k := defaults[c.name] + bump(&counts, c.name)
			id = "call_" + c.name
			if k > 1 {
				id += "_" + strconv.Itoa(k)
			}
		}
		if taken != nil {
			taken[id] = true
		}
		out[i] = wire.ToolCall{ID: id, Name: c.name, Arguments: c.args}
	}
	for k := range counts {
		counts[k].n += defaults[counts[k].name]
	}
	return out, counts
}

// fewCalls is the most calls of one answer, or remembered by a
// conversation, that are searched one by one; past it, a map finds them.
const fewCalls = 16

// nameCount is a count of calls of one function.
type nameCount struct {
	name string
	n    int
}

// bump adds one to the count of name in counts and returns it.
func bump(counts *[]nameCount, name string) int {
	for k := range *counts {
		if (*counts)[k].name == name {
			(*counts)[k].n++
			return (*counts)[k].n
		}
	}
	*counts = append(*counts, nameCount{name, 1})
	return 1
}

// idTaken reports whether id is one of the answer's calls' own ids or one
// given so far: in taken when it is not nil, else by a search.
func idTaken(taken map[string]bool, calls []ccall, given []wire.ToolCall, id string) bool {
	if taken != nil {
		return taken[id]
	}
	for _, c := range calls {
		if c.id == id {
			return true
		}
	}
	for _, g := range given {
		if g.ID == id {
			return true
		}
	}
	return false
}

// defaultUsage counts 1 token per 4 bytes, rounded up: the request body as
// input, the answer's text, reasoning and calls as output.
func defaultUsage(body []byte, a *wire.Answer) wire.Usage {
	out := len(a.Text) + len(a.Reasoning)
	for _, c := range a.ToolCalls {
		out += len(c.Name) + len(c.Arguments)
	}
	return wire.Usage{Input: (len(body) + 3) / 4, Output: (out + 3) / 4}
}

// Commit records that the answer was delivered whole: the conversation
// moves past its step, counts the answer and remembers its calls. It is
// safe to call more than once; only the first call counts.
func (p *Pending) Commit() {
	p.once.Do(func() {
		c := p.conv
		if p.named {
			c.mu.Lock()
			c.advance(p.step, p.calls, p.defaults)
			c.mu.Unlock()
		} else {
			c.advance(p.step, p.calls, p.defaults)
			p.e.keep(p, c)
		}
		p.e.reached.add(p.step)
	})
}

// advance moves the conversation past step, which made calls and left the
// default-id counts at defaults. c is locked or private.
func (c *conversation) advance(step int, calls []wire.ToolCall, defaults []nameCount) {
	c.last = step
	c.answers++
	if len(defaults) > 0 && c.defaults == nil {
		c.defaults = make(map[string]int, len(defaults))
	}
	for _, d := range defaults {
		c.defaults[d.name] = max(c.defaults[d.name], d.n)
	}
	for _, call := range calls {
		c.calls.remember(call)
	}
}

// callMemory keeps the calls a conversation's answers made, for later
// requests that name a call only by its id, forgetting the oldest past
// rememberCalls. Up to fewCalls are kept in a slice searched from the
// newest; past that, a map finds them.
type callMemory struct {
	order []idCall                  // oldest first
	byID  map[string]rememberedCall // nil until more than fewCalls
}

// idCall is a call remembered, with its id.
type idCall struct {
	id string
	rememberedCall
}

// remember keeps call; a call whose id is kept already replaces it, in its
// place.
func (m *callMemory) remember(call wire.ToolCall) {
	rc := rememberedCall{name: call.Name, args: call.Arguments}
	if k := m.find(call.ID); k >= 0 {
		m.order[k].rememberedCall = rc
		if m.byID != nil {
			m.byID[call.ID] = rc
		}
		return
	}
	m.order = append(m.order, idCall{call.ID, rc})
	if m.byID != nil {
		m.byID[call.ID] = rc
	} else if len(m.order) > fewCalls {
		m.byID = make(map[string]rememberedCall, len(m.order))
		for _, c := range m.order {
			m.byID[c.id] = c.rememberedCall
		}
	}
	if len(m.order) > rememberCalls {
		delete(m.byID, m.order[0].id)
		m.order = m.order[1:]
	}
}

// find returns where the call id is in m.order, or -1.
func (m *callMemory) find(id string) int {
	if m.byID != nil {
		if _, ok := m.byID[id]; !ok {
			return -1
		}
	}
	for k := len(m.order) - 1; k >= 0; k-- {
		if m.order[k].id == id {
			return k
		}
	}
	return -1
}

// get returns the call remembered under id.
func (m *callMemory) get(id string) (rememberedCall, bool) {
	if m.byID != nil {
		rc, ok := m.byID[id]
		return rc, ok
	}
	if k := m.find(id); k >= 0 {
		return m.order[k].rememberedCall, true
	}
	return rememberedCall{}, false
}

// clone returns a copy of m that shares nothing that changes.
func (m *callMemory) clone() callMemory {
	return callMemory{order: slices.Clone(m.order), byID: maps.Clone(m.byID)}
}

// Scenario returns (a copy of) the scenario the engine serves, each step's
// default id filled in.
func (e *Engine) Scenario() *Scenario {
	c := e.model.clone()
	for i := range c.Steps {
		c.Steps[i].ID = e.prog.steps[i].id
	}
	return c
}

// Answered counts the answers each step gave (and the client received
// whole) so far, by step id; steps that gave none are left out.
func (e *Engine) Answered() map[string]int {
	out := map[string]int{}
	e.reached.mu.Lock()
	defer e.reached.mu.Unlock()
	for i, n := range e.reached.all() {
		if n > 0 {
			out[e.prog.steps[i].id] = n
		}
	}
	return out
}

// Unused returns the ids of the steps no conversation has been answered by,
// in file order.
func (e *Engine) Unused() []string {
	var out []string
	e.reached.mu.Lock()
	defer e.reached.mu.Unlock()
	for i, n := range e.reached.all() {
		if n == 0 {
			out = append(out, e.prog.steps[i].id)
		}
	}
	return out
}
