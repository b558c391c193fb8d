package scenario

import (
	"encoding/json"
	"errors"
	"hash/maphash"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/wire"
)

// program is a scenario checked and made ready to answer: steps indexed, then
// lists resolved to step numbers, regular expressions compiled, calls and
// fixtures resolved.
type program struct {
	name        string
	onExhausted Exhausted
	maxSteps    int
	model       string
	steps       []cstep
	index       map[string]int // step id → position
	fixtures    map[string]*Fixture
	// entries are the steps that may begin a conversation, in file order;
	// flat says every step is one (no step has a then or a start key).
	entries []int
	flat    bool
	// starts indexes the entries for the first request: by the value of a
	// latest-user equals condition, and the entries without one (loose).
	starts        entryIndex
	silentEntries []int // the entries that are silent, in file order
	// writers indexes the steps by the text they answer (whitespace
	// removed) and their calls' names (writerKey), to find which step
	// wrote an assistant turn; the steps whose answer is made from the
	// request are not in it, and derivedEntries are those of them that are
	// entries, in file order.
	writers        hashIndex
	derivedEntries []int
}

// cstep is a step ready to answer, laid out so that what finding a
// position and answering with a plain text reads fits in 128 bytes (two
// cache lines): with many steps each request touches other steps, whose
// data is out of the cache, and each line it reads costs about a read
// from memory. What a plain answer does not have (tool calls, a
// generator, an error, timing, fields set by the scenario) is behind more.
type cstep struct {
	// entry says the step may begin a conversation; silent says its answer
	// never shows in a later request's history (an error, a cut stream).
	entry  bool
	silent bool
	// derived says the answer is made from the request (a text generator,
	// a json answer): which step wrote it is found by making it again.
	derived bool
	// ended says the step has no next candidates: the conversation is
	// exhausted.
	ended bool
	// userEqAt is the index in conds of the first latest-user equals
	// condition, whose value is userEq (-1 for none).
	userEqAt int32
	// next are the candidates once this step has answered.
	next  []int
	conds []condition
	// userEq is the key the entry index files the step under, which holds
	// checks here rather than through conds, one read fewer at another
	// place in memory.
	userEq string
	// echo is the answer's text as a later request echoes it, whitespace
	// removed: what writers files the step under, with its calls' names.
	echo string
	id   string
	text string // the answer's text (Answer.Text)
	more *stepMore
}

// stepMore is the rest of a step's answer; a step whose answer is its
// text alone, with every other field of Answer zero, has none.
type stepMore struct {
	calls  []ccall
	gen    *textGen      // derives the text from the request; nil for the text
	delay  time.Duration // the answer's delay plus its fixtures' delays
	answer Answer
}

// noMore is the stepMore of a plain answer: all zero.
var noMore stepMore

// rest returns the rest of st's answer, zero for a plain one.
func (st *cstep) rest() *stepMore {
	if st.more == nil {
		return &noMore
	}
	return st.more
}

// calls returns the tool calls st's answer makes.
func (st *cstep) calls() []ccall { return st.rest().calls }

// ccall is a tool call of an answer with its name and arguments resolved.
type ccall struct {
	name    string
	id      string // explicit id, "" for the default numbering
	args    []byte // canonical JSON object
	fixture *Fixture
}

// namePattern is what a scenario name may be: it becomes part of response
// ids and is picked by a request header.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// compile checks a scenario and returns it ready to answer, or every problem
// found. The program shares s's data: give it a copy the caller cannot
// change.
func compile(s *Scenario) (*program, ErrorList) {
	var p problems
	prog := &program{
		name: s.Name, onExhausted: s.OnExhausted, maxSteps: s.MaxSteps, model: s.Model,
		index: map[string]int{}, fixtures: map[string]*Fixture{},
	}
	if prog.onExhausted == "" {
		prog.onExhausted = Reject
	}
	top := loc{}
	if !namePattern.MatchString(s.Name) {
		p.add(top.key("name"), "%q is not a scenario name: 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", s.Name)
	}
	switch prog.onExhausted {
	case Reject, RepeatLast, Restart:
	default:
		p.add(top.key("on-exhausted"), "%q is not reject, repeat-last or restart", s.OnExhausted)
	}
	if s.MaxSteps < 0 {
		p.add(top.key("max-steps"), "must be >= 0, got %d", s.MaxSteps)
	}
	for i := range s.Fixtures {
		f := s.Fixtures[i]
		l := fixtureLoc(f.Name)
		if _, dup := prog.fixtures[f.Name]; dup {
			p.add(l, "a second fixture named %q", f.Name)
			continue
		}
		checkFixture(&p, l, &f)
		prog.fixtures[f.Name] = &f
	}
	if len(s.Steps) == 0 {
		p.add(top.key("steps"), "a scenario needs at least one step")
	}
	ids := make([]string, len(s.Steps))
	for i, st := range s.Steps {
		ids[i] = st.ID
		if ids[i] == "" {
			ids[i] = "step-" + strconv.Itoa(i+1)
		}
		if first, dup := prog.index[ids[i]]; dup {
			p.add(stepLoc(i, ids[i]).key("id"), "step id %q is also step %d's", ids[i], first+1)
			continue
		}
		prog.index[ids[i]] = i
	}
	used := map[string]bool{}
	prog.steps = make([]cstep, len(s.Steps))
	for i := range s.Steps {
		prog.steps[i] = compileStep(&p, prog, i, ids[i], &s.Steps[i], used)
	}
	linked := true
	near := &nearIDs{ids: ids}
	for i, st := range s.Steps {
		linked = linkStep(&p, prog, i, &st, near) && linked
	}
	markEntries(&p, prog, s.Steps)
	if linked && len(prog.entries) > 0 { // with a then naming no step nor one close to a step's id, what is reachable is a guess
		for _, i := range unreachable(prog.steps, prog.entries) {
			p.add(stepLoc(i, ids[i]), "no path from an entry step (the first step, or one with start: true) reaches this step")
			p.last().rule = ruleUnreachable
		}
	}
	for _, f := range s.Fixtures {
		if !used[f.Name] {
			p.add(fixtureLoc(f.Name), "the fixture is never used: no tool call or tool-result names it")
			p.last().rule = ruleUnused
		}
	}
	if len(p.list) > 0 {
		for _, e := range p.list {
			e.scenario = s.Name
		}
		return nil, p.list
	}
	return prog, nil
}

// checkFixture checks a fixture against its preset's schemas.
func checkFixture(p *problems, l loc, f *Fixture) {
	if f.Name == "" {
		p.add(l, "a fixture needs a name")
	}
	d, ok := presets.Lookup(f.Preset)
	if !ok {
		p.add(l.key("preset"), "%s", unknownPreset(f.Preset))
		return
	}
	checkAs(p, l.key("as"), f.As)
	if f.Call.Name != "" && f.Call.Name != f.Preset {
		p.add(l.key("preset"), "the call names %q, not the preset %q", f.Call.Name, f.Preset)
	}
	checkCallID(p, l.key("id"), f.Call.ID)
	if f.Delay < 0 {
		p.add(l.key("delay"), "must be >= 0, got %s", f.Delay)
	}
	schemaCheck(p, l.key("arguments"), d.ValidateArguments(orEmpty(f.Call.Arguments)))
	switch {
	case f.Result.Content == nil:
		p.add(l, "a fixture needs a result or an error")
	case f.Result.IsError:
		schemaCheck(p, l.key("error"), d.ValidateError(f.Result.Content))
	default:
		schemaCheck(p, l.key("result"), d.ValidateResult(f.Result.Content))
	}
}

// schemaCheck adds one problem per schema violation, each at its field.
func schemaCheck(p *problems, l loc, err error) {
	if err == nil {
		return
	}
	var ve *presets.ValidationError
	if !errors.As(err, &ve) {
		p.add(l, "%v", err)
		return
	}
	for _, v := range ve.Violations {
		at := l.pointer(v.Path)
		if l.tail == "error" && strings.HasPrefix(v.Path, "/error") {
			at = l.pointer(strings.TrimPrefix(v.Path, "/error"))
		}
		p.add(at, "%s (%s schema of preset %s: %s)", v.Message, ve.Part, ve.Preset, v.Rule)
	}
}

func checkCallID(p *problems, l loc, id string) {
	if id == "" {
		return
	}
	if strings.TrimSpace(id) == "" {
		p.add(l, "a call id must not be blank")
	}
	if n := len([]rune(id)); n > presets.MaxIDLength {
		p.add(l, "a call id has at most %d characters, this one %d", presets.MaxIDLength, n)
	}
}

func orEmpty(args json.RawMessage) []byte {
	if len(args) == 0 {
		return []byte("{}")
	}
	return args
}

func compileStep(p *problems, prog *program, i int, id string, st *Step, used map[string]bool) cstep {
	l := stepLoc(i, id)
	cs := cstep{id: id, text: st.Respond.Text}
	cs.conds = compileConditions(p, prog, l.key("when"), &st.When, used)
	var at int
	cs.userEq, at = userEquals(cs.conds)
	cs.userEqAt = int32(at)
	more := &stepMore{answer: st.Respond}
	more.calls, more.delay = compileAnswer(p, prog, l.key("respond"), &st.Respond, used)
	more.gen = compileTextFrom(p, l.key("respond").key("text"), st)
	if !plainAnswer(more) {
		cs.more = more
	}
	return cs
}

// plainAnswer reports whether m is the rest of an answer that is its text
// alone: nothing besides Answer.Text set.
func plainAnswer(m *stepMore) bool {
	a := m.answer
	a.Text = ""
	return len(m.calls) == 0 && m.gen == nil && m.delay == 0 && reflect.DeepEqual(a, Answer{})
}

func compileConditions(p *problems, prog *program, l loc, w *Conditions, used map[string]bool) []condition {
	var out []condition
	if c := compileText(p, l.key("latest-user"), w.LatestUser, "latest-user"); c != nil {
		out = append(out, c)
	}
	if c := compileText(p, l.key("system"), w.System, "system"); c != nil {
		out = append(out, c)
	}
	for k, tr := range w.ToolResults {
		tl := l.key("tool-result")
		if len(w.ToolResults) > 1 {
			tl = tl.index(k)
		}
		if c := compileToolResult(p, prog, tl, tr, used); c != nil {
			out = append(out, c)
		}
	}
	if w.Model != "" {
		out = append(out, modelCond(w.Model))
	}
	if w.API != "" {
		if w.API.CallsTools() {
			out = append(out, apiCond(w.API))
		} else {
			p.add(l.key("api"), "%q is not %s", w.API, chatKindList)
		}
	}
	if len(w.ToolsOffered) > 0 {
		for k, name := range w.ToolsOffered {
			if name == "" {
				p.add(l.key("tools-offered").index(k), "a function name must not be empty")
			}
		}
		out = append(out, toolsCond(w.ToolsOffered))
	}
	for k, jc := range w.JSON {
		jl := l.key("json").index(k)
		if jc.Path == "" {
			p.add(jl.key("path"), "a json condition needs a path")
		}
		if !json.Valid(jc.Equals) {
			p.add(jl.key("equals"), "not a JSON value")
		}
		out = append(out, jsonCond(jc))
	}
	return out
}

// chatKindList names the chat APIs in an error: "openai-chat, …, gemini or ollama".
var chatKindList = func() string {
	kinds := wire.ChatKinds()
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}()

func compileText(p *problems, l loc, tc *TextCondition, name string) condition {
	if tc == nil {
		return nil
	}
	c := &textCond{name: name, op: tc.Op, value: tc.Value}
	switch tc.Op {
	case OpEquals, OpContains:
	case OpMatches:
		re, err := regexp.Compile(tc.Value)
		if err != nil {
			p.add(l.key("matches"), "not an RE2 regular expression: %v", err)
			return nil
		}
		c.re = re
	default:
		p.add(l, "%q is not equals, contains or matches", tc.Op)
		return nil
	}
	return c
}

func compileToolResult(p *problems, prog *program, l loc, tr ToolResultCondition, used map[string]bool) condition {
	if tr.Fixture != "" {
		if tr.Name != "" || tr.ID != "" || tr.Arguments != nil || tr.Result != nil {
			p.add(l, "a tool-result names a fixture or describes a call (name, id, arguments, result), not both")
		}
		f, ok := prog.fixtures[tr.Fixture]
		if !ok {
			p.add(l.key("fixture"), "no fixture is named %q", tr.Fixture)
			return nil
		}
		used[tr.Fixture] = true
		return &toolResultCond{name: f.function(), id: f.Call.ID, args: orEmpty(f.Call.Arguments), result: f.Result.Content, fixture: f.Name}
	}
	if tr.Name == "" {
		p.add(l, "a tool-result needs a fixture or a function name")
		return nil
	}
	checkCallID(p, l.key("id"), tr.ID)
	if tr.Arguments != nil && !json.Valid(tr.Arguments) {
		p.add(l.key("arguments"), "not a JSON value")
	}
	if tr.Result != nil && !json.Valid(tr.Result) {
		p.add(l.key("result"), "not a JSON value")
	}
	return &toolResultCond{name: tr.Name, id: tr.ID, args: tr.Arguments, result: tr.Result}
}

func compileAnswer(p *problems, prog *program, l loc, a *Answer, used map[string]bool) ([]ccall, time.Duration) {
	if a.Error != nil {
		checkError(p, l.key("error"), a.Error)
		if a.Text != "" || a.TextFrom != nil || a.JSON != nil || a.Reasoning != "" || len(a.ToolCalls) > 0 || a.Finish != "" || a.Usage != nil ||
			a.ID != "" || !a.Created.IsZero() || a.Delay != 0 || a.Stream != (Stream{}) || a.CutAfter != 0 {
			p.add(l, "an error answer has nothing else in respond")
		}
	}
	checkJSONAnswer(p, l.key("json"), a)
	switch a.Finish {
	case "", wire.FinishStop, wire.FinishLength, wire.FinishToolCalls:
	default:
		p.add(l.key("finish"), "%q is not stop, length or tool-calls", a.Finish)
	}
	if a.Usage != nil && (a.Usage.Input < 0 || a.Usage.Output < 0 || a.Usage.Reasoning < 0) {
		p.add(l.key("usage"), "token counts must be >= 0")
	}
	if a.Usage != nil && a.Usage.Reasoning > a.Usage.Output {
		p.add(l.key("usage").key("reasoning"), "reasoning %d is part of output and cannot exceed it (%d)", a.Usage.Reasoning, a.Usage.Output)
	}
	if a.Delay < 0 {
		p.add(l.key("delay"), "must be >= 0, got %s", a.Delay)
	}
	if a.Stream.Chunk < 0 {
		p.add(l.key("stream").key("chunk"), "must be >= 1, got %d", a.Stream.Chunk)
	}
	if a.Stream.Interval < 0 {
		p.add(l.key("stream").key("interval"), "must be >= 0, got %s", a.Stream.Interval)
	}
	if a.CutAfter < 0 {
		p.add(l.key("cut-after"), "must be >= 1, got %d", a.CutAfter)
	}
	delay := a.Delay
	calls := make([]ccall, 0, len(a.ToolCalls))
	ids := map[string]int{}
	for k, ca := range a.ToolCalls {
		cl := l.key("tool-calls").index(k)
		c, ok := compileCall(p, prog, cl, ca, used)
		if !ok {
			continue
		}
		if c.fixture != nil {
			delay += c.fixture.Delay
		}
		if c.id != "" {
			if first, dup := ids[c.id]; dup {
				p.add(cl, "call id %q is also tool-calls[%d]'s; calls in one answer need distinct ids", c.id, first)
			}
			ids[c.id] = k
		}
		calls = append(calls, c)
	}
	return calls, delay
}

func checkError(p *problems, l loc, e *ErrorAnswer) {
	if e.Status < 400 || e.Status > 599 {
		p.add(l.key("status"), "an error status is 400 to 599, got %d", e.Status)
	} else if http.StatusText(e.Status) == "" && e.Status != 529 && e.Type == "" {
		p.add(l.key("type"), "status %d has no standard meaning: give its type", e.Status)
	}
	if e.Message == "" {
		p.add(l.key("message"), "an error needs a message")
	}
	if e.RetryAfter < 0 {
		p.add(l.key("retry-after"), "must be >= 0, got %s", e.RetryAfter)
	}
}

func compileCall(p *problems, prog *program, l loc, ca CallAnswer, used map[string]bool) (ccall, bool) {
	kinds := 0
	for _, s := range []string{ca.Fixture, ca.Preset, ca.Function} {
		if s != "" {
			kinds++
		}
	}
	if kinds != 1 {
		p.add(l, "a tool call has exactly one of fixture, preset or function")
		return ccall{}, false
	}
	checkCallID(p, l.key("id"), ca.ID)
	switch {
	case ca.Fixture != "":
		if ca.ID != "" || ca.Arguments != nil {
			p.add(l, "a fixture's call takes its id and arguments from the fixture")
		}
		if ca.As != "" {
			p.add(l.key("as"), "a fixture's call takes its name from the fixture: give the fixture as: %s", ca.As)
		}
		f, ok := prog.fixtures[ca.Fixture]
		if !ok {
			p.add(l.key("fixture"), "no fixture is named %q", ca.Fixture)
			return ccall{}, false
		}
		used[ca.Fixture] = true
		return ccall{name: f.function(), id: f.Call.ID, args: canonicalArgs(f.Call.Arguments), fixture: f}, true
	case ca.Preset != "":
		d, ok := presets.Lookup(ca.Preset)
		if !ok {
			p.add(l.key("preset"), "%s", unknownPreset(ca.Preset))
			return ccall{}, false
		}
		checkAs(p, l.key("as"), ca.As)
		args := orEmpty(ca.Arguments)
		schemaCheck(p, l.key("arguments"), d.ValidateArguments(args))
		name := ca.Preset
		if ca.As != "" {
			name = ca.As
		}
		return ccall{name: name, id: ca.ID, args: canonicalArgs(args)}, true
	}
	if ca.As != "" {
		p.add(l.key("as"), "as names a preset's call; a function call is named by function")
	}
	args := orEmpty(ca.Arguments)
	if !json.Valid(args) {
		p.add(l.key("arguments"), "not a JSON value")
	} else if !gjson.ParseBytes(args).IsObject() {
		p.add(l.key("arguments"), "a call's arguments are a JSON object")
	}
	return ccall{name: ca.Function, id: ca.ID, args: canonicalArgs(args)}, true
}

// canonicalArgs returns arguments as canonical JSON (compact, keys sorted),
// or as given when they are not JSON (already reported).
func canonicalArgs(args []byte) []byte {
	canon, err := presets.Canonical(orEmpty(args))
	if err != nil {
		return orEmpty(args)
	}
	return canon
}

// linkStep resolves a step's then list, or its default, to step numbers. An
// id naming no step is a problem; when it is a slip of a step's id (see
// nearIDs) the step is linked to that one, as its author meant, so that what
// is reachable is still known. It reports whether every id was linked.
func linkStep(p *problems, prog *program, i int, st *Step, near *nearIDs) bool {
	cs := &prog.steps[i]
	l := stepLoc(i, cs.id)
	switch {
	case st.Complete:
		if st.Then != nil {
			p.add(l.key("then"), "a complete step has no then: the conversation ends there")
		}
		cs.ended = true
		return true
	case st.Then == nil:
		if i+1 < len(prog.steps) {
			cs.next = []int{i + 1}
		} else {
			cs.ended = true
		}
		return true
	}
	linked := true
	for k, id := range st.Then {
		j, ok := prog.index[id]
		if !ok {
			tl := l.key("then")
			if len(st.Then) > 1 {
				tl = tl.index(k)
			}
			j = near.find(id)
			if j < 0 {
				p.add(tl, "no step is named %q", id)
				linked = false
				continue
			}
			p.add(tl, "no step is named %q (did you mean %q?)", id, near.ids[j])
		}
		cs.next = append(cs.next, j)
	}
	cs.ended = len(cs.next) == 0
	return linked
}

// markEntries finds the entry steps: every step of a flat list (no step
// has a then or a start key), else the first step unless it says start:
// false, and every step with start: true. A scenario with steps but no
// entry is a problem, reported at the first step's start key.
func markEntries(p *problems, prog *program, steps []Step) {
	prog.flat = !slices.ContainsFunc(steps, func(st Step) bool { return st.Then != nil || st.Start != nil })
	for i, st := range steps {
		entry := prog.flat || (i == 0 && st.Start == nil) || (st.Start != nil && *st.Start)
		prog.steps[i].entry = entry
		if entry {
			prog.entries = append(prog.entries, i)
		}
		a := &st.Respond
		prog.steps[i].silent = a.Error != nil || a.CutAfter > 0
	}
	if len(steps) > 0 && len(prog.entries) == 0 {
		p.add(stepLoc(0, prog.steps[0].id).key("start"), "no step may begin a conversation: the first step says start: false and no step says start: true")
	}
	seed := maphash.MakeSeed()
	prog.starts = indexEntries(prog, seed)
	var keys []string
	var writers []int
	for i := range prog.steps {
		st := &prog.steps[i]
		m := st.rest()
		st.derived = m.gen != nil || m.answer.JSON != nil
		if st.derived && st.entry {
			prog.derivedEntries = append(prog.derivedEntries, i)
		}
		if m.answer.Error == nil && !st.derived {
			names := make([]string, len(m.calls))
			for k, c := range m.calls {
				names[k] = c.name
			}
			st.echo = textKey(st.text)
			keys, writers = append(keys, writerKey(st.echo, names)), append(writers, i)
		}
	}
	prog.writers = newHashIndex(seed, keys, writers)
	packKeys(prog.steps)
	packNext(prog.steps)
}

// packNext copies the steps' candidate lists (next) into one array in
// file order and points them there, as packKeys does the keys: a
// conversation's next candidates are read from the step it stands at, and
// the lists of neighbouring steps then share a cache line instead of each
// being an allocation of its own, one more read behind the step's.
func packNext(steps []cstep) {
	n := 0
	for i := range steps {
		n += len(steps[i].next)
	}
	all := make([]int, 0, n)
	for i := range steps {
		if steps[i].next == nil {
			continue
		}
		at := len(all)
		all = append(all, steps[i].next...)
		steps[i].next = all[at:len(all):len(all)]
	}
}

// packKeys copies the steps' index keys (userEq, echo) into one string in
// file order and points them there: a lookup checks the key of the step it
// found, and the keys of neighbouring steps then share a cache line instead
// of lying wherever the scenario's strings were made.
func packKeys(steps []cstep) {
	n := 0
	for i := range steps {
		n += len(steps[i].userEq) + len(steps[i].echo)
	}
	var b strings.Builder
	b.Grow(n)
	for i := range steps {
		b.WriteString(steps[i].userEq)
		b.WriteString(steps[i].echo)
	}
	all, at := b.String(), 0
	for i := range steps {
		st := &steps[i]
		st.userEq, at = all[at:at+len(st.userEq)], at+len(st.userEq)
		st.echo, at = all[at:at+len(st.echo)], at+len(st.echo)
	}
}

// unreachable returns the steps that no path from an entry step reaches, in
// order.
func unreachable(steps []cstep, entries []int) []int {
	seen := make([]bool, len(steps))
	queue := slices.Clone(entries)
	for _, i := range entries {
		seen[i] = true
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, j := range steps[i].next {
			if !seen[j] {
				seen[j] = true
				queue = append(queue, j)
			}
		}
	}
	var out []int
	for i, ok := range seen {
		if !ok {
			out = append(out, i)
		}
	}
	return out
}
