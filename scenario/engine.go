package scenario

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/llmproxy/llmproxy/wire"
)

const (
	// DefaultConversation is the conversation of a request that names none.
	DefaultConversation = "default"
	// MaxConversations bounds the conversations one Engine holds; a request
	// naming one more is refused with ErrTooManyConversations.
	MaxConversations = 10000
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

	mu    sync.Mutex
	convs map[string]*conversation

	reachedMu sync.Mutex
	reached   []int // answers committed, by step

	schemas schemaCache // the schemas of json answers' requests
}

// conversation is one conversation's position.
type conversation struct {
	mu       sync.Mutex
	last     int // step last answered; -1 before the first answer
	answers  int // answers delivered, counting from 0
	defaults map[string]int
	calls    map[string]rememberedCall
	order    []string // call ids in the order remembered, to forget the oldest
}

// NewEngine checks a scenario and returns an engine that serves it. An
// invalid scenario is an ErrorList.
func NewEngine(s *Scenario) (*Engine, error) {
	prog, errs := compile(s.clone())
	if errs != nil {
		return nil, errs.sorted()
	}
	return &Engine{prog: prog, model: s.clone(), convs: map[string]*conversation{}, reached: make([]int, len(prog.steps))}, nil
}

// Name returns the scenario's name.
func (e *Engine) Name() string { return e.prog.name }

// Request is a request as the engine reads it.
type Request struct {
	// Conversation names the conversation (the X-Llmproxy-Conversation
	// header); "" is DefaultConversation.
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
	step     int
	calls    []wire.ToolCall
	defaults map[string]int // the default-id counts once this answer is delivered
	once     sync.Once
}

// Answer finds the step that answers req and returns its answer, pending.
// When no step answers, the error is a *Miss wrapping ErrMiss and nothing
// changes.
func (e *Engine) Answer(req Request) (*Pending, error) {
	name := req.Conversation
	if name == "" {
		name = DefaultConversation
	}
	conv, err := e.conversation(name)
	if err != nil {
		return nil, err
	}
	conv.mu.Lock()
	defer conv.mu.Unlock()
	step, miss := e.pick(conv, name, &req)
	if miss != nil {
		return nil, miss
	}
	pend, miss := e.prepare(conv, name, step, &req)
	if miss != nil {
		return nil, miss
	}
	return pend, nil
}

// conversation returns the named conversation, creating it on first use.
func (e *Engine) conversation(name string) (*conversation, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.convs[name]; ok {
		return c, nil
	}
	if len(e.convs) >= MaxConversations {
		return nil, fmt.Errorf("scenario %s: conversation %q: %w (%d)", e.prog.name, name, ErrTooManyConversations, MaxConversations)
	}
	c := &conversation{last: -1, defaults: map[string]int{}, calls: map[string]rememberedCall{}}
	e.convs[name] = c
	return c, nil
}

// pick returns the step that answers, or the miss. conv is locked.
func (e *Engine) pick(conv *conversation, name string, req *Request) (int, *Miss) {
	p := e.prog
	if p.maxSteps > 0 && conv.answers >= p.maxSteps {
		return -1, &Miss{Scenario: p.name, Conversation: name,
			Reason: fmt.Sprintf("the conversation has had its %d answers (max-steps)", p.maxSteps)}
	}
	candidates := []int{0}
	if conv.last >= 0 {
		last := &p.steps[conv.last]
		candidates = last.next
		if last.ended {
			switch p.onExhausted {
			case RepeatLast:
				return conv.last, nil
			case Restart:
				candidates = []int{0}
			default:
				return -1, &Miss{Scenario: p.name, Conversation: name,
					Reason: fmt.Sprintf("the conversation ended at step %q (on-exhausted: reject)", last.id)}
			}
		}
	}
	v := newView(&req.Parsed, req.Body, conv.recall)
	miss := &Miss{Scenario: p.name, Conversation: name}
	for _, i := range candidates {
		st := &p.steps[i]
		failed := false
		for _, c := range st.conds {
			if ok, m := c.check(v); !ok {
				m.Step = st.id
				miss.Candidates = append(miss.Candidates, m)
				failed = true
				break
			}
		}
		if !failed {
			return i, nil
		}
	}
	return -1, miss
}

// recall returns a call the conversation's answers made. conv is locked.
func (c *conversation) recall(id string) (rememberedCall, bool) {
	rc, ok := c.calls[id]
	return rc, ok
}

// prepare builds the pending answer of a step, or the miss of a json
// answer the request's schema refuses. conv is locked; nothing in it
// changes until Commit.
func (e *Engine) prepare(conv *conversation, name string, step int, req *Request) (*Pending, *Miss) {
	p := e.prog
	st := &p.steps[step]
	a := &st.answer
	pend := &Pending{e: e, conv: conv, step: step}
	d := &pend.Delivery
	d.Scenario, d.Conversation, d.Step = p.name, name, st.id
	d.Delay, d.Stream, d.CutAfter = st.delay, a.Stream, a.CutAfter
	n := conv.answers + 1
	ans := wire.Answer{Model: req.Parsed.Model, ID: a.ID, Created: a.Created}
	if ans.Model == "" {
		ans.Model = p.model
	}
	if ans.Model == "" {
		ans.Model = DefaultModel
	}
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
	ans.Text, ans.Reasoning = a.Text, a.Reasoning
	if st.text != nil {
		ans.Text = st.text.text(requestText(req, ans.Model))
	}
	calls := st.calls
	if a.JSON != nil {
		out, reason := answerJSON(&e.schemas, a.JSON, req)
		if reason != "" {
			return nil, &Miss{Scenario: p.name, Conversation: name, Reason: fmt.Sprintf("step %q: %s", st.id, reason)}
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
	for i, c := range st.calls {
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
// calls took. It also returns the counts once these calls are made.
func callIDs(calls []ccall, defaults map[string]int) ([]wire.ToolCall, map[string]int) {
	out := make([]wire.ToolCall, len(calls))
	taken := map[string]bool{}
	for _, c := range calls {
		if c.id != "" {
			taken[c.id] = true
		}
	}
	counts := map[string]int{}
	for i, c := range calls {
		id := c.id
		for id == "" || (c.id == "" && taken[id]) {
			counts[c.name]++
			k := defaults[c.name] + counts[c.name]
			id = "call_" + c.name
			if k > 1 {
				id += "_" + strconv.Itoa(k)
			}
		}
		taken[id] = true
		out[i] = wire.ToolCall{ID: id, Name: c.name, Arguments: c.args}
	}
	next := make(map[string]int, len(counts))
	for name, n := range counts {
		next[name] = defaults[name] + n
	}
	return out, next
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
		c.mu.Lock()
		c.last = p.step
		c.answers++
		for name, n := range p.defaults {
			c.defaults[name] = max(c.defaults[name], n)
		}
		for _, call := range p.calls {
			c.remember(call)
		}
		c.mu.Unlock()
		p.e.reachedMu.Lock()
		p.e.reached[p.step]++
		p.e.reachedMu.Unlock()
	})
}

// remember keeps a call for later requests that name it only by id,
// forgetting the oldest past rememberCalls. c is locked.
func (c *conversation) remember(call wire.ToolCall) {
	if _, ok := c.calls[call.ID]; !ok {
		c.order = append(c.order, call.ID)
	}
	c.calls[call.ID] = rememberedCall{name: call.Name, args: call.Arguments}
	if len(c.order) > rememberCalls {
		delete(c.calls, c.order[0])
		c.order = c.order[1:]
	}
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
	e.reachedMu.Lock()
	defer e.reachedMu.Unlock()
	out := map[string]int{}
	for i, n := range e.reached {
		if n > 0 {
			out[e.prog.steps[i].id] = n
		}
	}
	return out
}

// Unused returns the ids of the steps no conversation has been answered by,
// in file order.
func (e *Engine) Unused() []string {
	e.reachedMu.Lock()
	defer e.reachedMu.Unlock()
	var out []string
	for i, n := range e.reached {
		if n == 0 {
			out = append(out, e.prog.steps[i].id)
		}
	}
	return out
}
