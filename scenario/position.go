package scenario

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
	"github.com/llmproxy/llmproxy/wire"
)

// The position rule: a request that names no conversation carries its
// conversation so far, and the assistant turns in it were written by
// earlier steps. locate walks them in order from the entry steps: each
// assistant turn (with the tool calls it made) moves the position to the
// first candidate step that writes exactly that turn, passing through
// candidate steps whose answers never show in a history (errors, cut
// streams) when no candidate writes it directly. A turn no step writes (a
// few-shot example) is skipped. What no history shows is kept by the engine:
// where a request with the same bytes stands after a silent answer, and
// where a conversation stands after the answer a response id names.

// RequestKey is the key of a request whose conversation is read from the
// request: its body's SHA-256. Requests with the same key stand at the same
// position, so a server answers them one at a time.
func RequestKey(body []byte) [32]byte { return sha256.Sum256(body) }

// assistantRoles are the roles (or Responses item types) of the turns an
// answer is echoed as.
var assistantRoles = map[string]bool{"assistant": true, "model": true, "function_call": true, "reasoning": true}

// written is one answer as a later request echoes it: consecutive assistant
// turns, their text with whitespace removed and the calls they made, and
// the latest user text before them (what an answer made from the request
// was made from).
type written struct {
	text  string
	calls []wire.ToolCall
	user  string
	// writers are the steps the writers index files under w's key (see
	// lookupAll), which may include steps filed under another key; one
	// holds a single one.
	key     uint64 // the hash of w's index key (see hash)
	writers []int
	one     [1]int
}

// hash returns the hash in ix of the written answer's index key: the
// hash of writerKey of its text and call names, without making the key.
func (w *written) hash(ix *hashIndex) uint64 {
	var h maphash.Hash
	h.SetSeed(ix.seed)
	h.WriteString(w.text)
	h.WriteByte(0)
	for i, c := range w.calls {
		if i > 0 {
			h.WriteByte(0)
		}
		h.WriteString(c.Name)
	}
	return h.Sum64()
}

// writerKey is the index key of an answer with this text (whitespace
// removed) and these call names.
func writerKey(text string, names []string) string {
	return text + "\x00" + strings.Join(names, "\x00")
}

// textKey removes every whitespace character from s: a client may echo a
// streamed answer as several parts joined differently.
func textKey(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// writtenAnswers returns the answers a request echoes, in order.
func writtenAnswers(v *view) []written {
	req := v.req
	callsOf := map[int][]wire.ToolCall{}
	for _, c := range req.ToolCalls {
		i := v.turnOf(c.Path)
		callsOf[i] = append(callsOf[i], c)
	}
	withResults := map[int]bool{}
	for _, r := range req.ToolResults {
		withResults[v.turnOf(r.Path)] = true
	}
	var out []written
	var user string
	from := -1 // the first turn of the answer being read, -1 for none
	flush := func(to int) {
		if from >= 0 {
			out[len(out)-1].text = joinedTextKey(req.Turns[from:to])
			from = -1
		}
	}
	for i, t := range req.Turns {
		if !assistantRoles[t.Role] {
			flush(i)
			if t.Role == "user" && (t.Text != "" || !withResults[i]) { // as newView reads the latest user text
				user = t.Text
			}
			continue
		}
		if from < 0 {
			out = append(out, written{user: user})
			from = i
		}
		out[len(out)-1].calls = append(out[len(out)-1].calls, callsOf[i]...)
	}
	flush(len(req.Turns))
	return out
}

// joinedTextKey returns the texts of turns joined, whitespace removed; for
// one turn, without copying a text that has none.
func joinedTextKey(turns []wire.Turn) string {
	if len(turns) == 1 {
		return textKey(turns[0].Text)
	}
	var b strings.Builder
	for _, t := range turns {
		b.WriteString(textKey(t.Text))
	}
	return b.String()
}

// locate reads a request's position: from the answer its
// previous_response_id names, or the start, through the answers it echoes,
// then past the silent answers a request with the same key was given
// (kept says there were; the key, a hash of the whole body, is made only
// when the engine keeps such answers).
func (e *Engine) locate(req *Request, v *view) (conv *conversation, kept bool, miss *Miss) {
	p := e.prog
	if prev := req.Parsed.Previous; prev != "" {
		bases, ok := e.byID.get(prev)
		if !ok {
			return nil, false, &Miss{Scenario: p.name, Conversation: prev, Reason: fmt.Sprintf(
				"previous_response_id %q names no answer this engine gave (or one it forgot: it remembers %d); was the mock restarted?", prev, MaxConversations)}
		}
		conv = e.pickBase(bases, v).clone()
	}
	ws := writtenAnswers(v)
	p.hashAll(ws, v)
	if conv == nil {
		conv = newConversation(conversationName(req))
	}
	d := &derivation{req: req, model: p.answerModel(req)}
	p.lookupAll(ws, v)
	for i := range ws {
		e.follow(conv, &ws[i], d)
	}
	if conv.last >= 0 && len(p.steps[conv.last].next) > 0 {
		v.warmed = p.steps[p.steps[conv.last].next[0]].warm() // the first candidate, as lookupStarts warms the first entry
	}
	if e.silent.len() > 0 {
		key := RequestKey(req.Body)
		if s, ok := e.silent.get(string(key[:])); ok {
			return s.clone(), true, nil
		}
	}
	return conv, false, nil
}

// pickBase returns, of the positions an answer id names (several when
// conversations on different paths gave the same id), the first from which
// a step answers v, else the first.
func (e *Engine) pickBase(bases []*conversation, v *view) *conversation {
	for _, b := range bases {
		c := b.clone()
		v.conv = c
		if _, miss := e.pick(c, v); miss == nil {
			return b
		}
	}
	return bases[0]
}

// conversationName names a conversation read from its request: auto-
// followed by 8 hex digits of its system prompt and first user turn, which
// every request of the conversation repeats.
func conversationName(req *Request) string {
	h := sha256.New()
	h.Write([]byte(req.Parsed.System))
	for _, t := range req.Parsed.Turns {
		if t.Role == "user" {
			h.Write([]byte{0})
			h.Write([]byte(t.Text))
			break
		}
	}
	var sum [sha256.Size]byte
	name := []byte("auto-00000000")
	hex.Encode(name[len("auto-"):], h.Sum(sum[:0])[:4])
	return string(name)
}

// follow moves c past the step that wrote w: the first candidate that
// writes it, else one reached through silent candidates; a w no step
// writes leaves c where it is.
func (e *Engine) follow(c *conversation, w *written, d *derivation) {
	if step, calls := e.writer(c, w, d); step >= 0 {
		e.walk(c, step, calls)
		return
	}
	path, calls := e.throughSilent(c, w, d)
	for k, step := range path {
		if k < len(path)-1 {
			e.walk(c, step, e.prog.steps[step].calls())
		} else {
			e.walk(c, step, calls)
		}
	}
}

// walk moves c past step as if its answer, which made calls, had been
// delivered.
func (e *Engine) walk(c *conversation, step int, calls []ccall) {
	ids, defaults := callIDs(calls, c.defaults)
	c.advance(step, ids, defaults)
}

// rank returns how a conversation whose candidates are next and, if
// entries, the entry steps (see candidates) ranks step i as a candidate for
// its next answer, conditions aside: its place in next, else the entry
// steps by file order; -1 for a step that is no candidate.
func (p *program) rank(next []int, entries bool, i int) int {
	if k := slices.Index(next, i); k >= 0 {
		return k
	}
	if entries && p.steps[i].entry {
		return len(next) + i
	}
	return -1
}

// candidates returns c's candidate steps for its next answer, conditions
// aside: the then list of the step last answered (or that step again, on
// repeat-last), and whether the entry steps are candidates too.
func (e *Engine) candidates(c *conversation) (next []int, entries bool) {
	p := e.prog
	if c.last < 0 {
		return nil, true
	}
	st := &p.steps[c.last]
	switch {
	case !st.ended:
		return st.next, false
	case p.onExhausted == RepeatLast:
		return []int{c.last}, false
	case p.onExhausted == Restart:
		return nil, true
	}
	return nil, false
}

// writer returns the best-ranked step that writes w from c, or -1, and the
// calls its answer made. The steps with a fixed answer are looked up by
// w's text and call names; a candidate whose answer is made from the
// request is made again (derives) and compared.
func (e *Engine) writer(c *conversation, w *written, d *derivation) (int, []ccall) {
	p := e.prog
	next, entries := e.candidates(c)
	best, bestRank := -1, -1
	var bestCalls []ccall
	for _, i := range w.writers {
		st := &p.steps[i]
		r := p.rank(next, entries, i)
		if r < 0 || (best >= 0 && r >= bestRank) || !e.writes(c, st.calls(), w) {
			continue // w.writers have w's text; writes checks the calls' names, the rest of the key
		}
		best, bestRank, bestCalls = i, r, st.calls()
	}
	if len(p.derivedEntries) == 0 && !slices.ContainsFunc(next, func(i int) bool { return p.steps[i].derived }) {
		return best, bestCalls
	}
	try := func(i int) {
		if r := p.rank(next, entries, i); r >= 0 && (best < 0 || r < bestRank) {
			if calls, ok := e.derives(c, i, w, d); ok {
				best, bestRank, bestCalls = i, r, calls
			}
		}
	}
	for _, i := range next {
		if p.steps[i].derived {
			try(i)
		}
	}
	if entries {
		for _, i := range p.derivedEntries { // by rank: stop at the first that writes w
			if best >= 0 && p.rank(next, entries, i) >= bestRank {
				break
			}
			try(i)
		}
	}
	return best, bestCalls
}

// writes reports whether calls, made by an answer in c, are w's: the same
// calls in the same order, with equal arguments and, where w's call has an
// id, the id the answer gives it.
func (e *Engine) writes(c *conversation, calls []ccall, w *written) bool {
	if len(calls) != len(w.calls) {
		return false
	}
	ids, _ := callIDs(calls, c.defaults)
	for k, call := range w.calls {
		if call.Name != ids[k].Name || !sameJSON(orEmpty(call.Arguments), ids[k].Arguments) ||
			(call.ID != "" && call.ID != ids[k].ID) {
			return false
		}
	}
	return true
}

// throughSilent finds a path from c through silent candidate steps to a
// step that writes w, breadth first, and returns it (the silent steps, then
// the writer) and the calls the writer made, or nil.
func (e *Engine) throughSilent(c *conversation, w *written, d *derivation) ([]int, []ccall) {
	p := e.prog
	next, entries := e.candidates(c)
	var queue []int
	for _, i := range p.silentEntries {
		if p.rank(next, entries, i) >= 0 {
			queue = append(queue, i)
		}
	}
	if c.last >= 0 {
		for _, i := range p.steps[c.last].next {
			if p.steps[i].silent && !slices.Contains(queue, i) {
				queue = append(queue, i)
			}
		}
	}
	parent := map[int]int{}
	for _, i := range queue {
		parent[i] = -1
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		probe := &conversation{last: s, defaults: c.defaults}
		if found, calls := e.writer(probe, w, d); found >= 0 {
			path := []int{found}
			for at := s; at >= 0; at = parent[at] {
				path = append(path, at)
			}
			slices.Reverse(path)
			return path, calls
		}
		for _, n := range p.steps[s].next {
			if _, seen := parent[n]; !seen && p.steps[n].silent {
				parent[n] = s
				queue = append(queue, n)
			}
		}
	}
	return nil, nil
}

// keep remembers where a conversation read from its request stands after
// the answer p delivered: by the request's key after a silent answer, and
// by the answer's id on the Responses API, whose requests may continue an
// answer by its id alone.
func (e *Engine) keep(p *Pending, c *conversation) {
	if e.prog.steps[p.step].silent {
		e.silent.put(string(p.key[:]), c)
	}
	if p.kind == wire.KindOpenAIResponses && p.Error == nil {
		e.byID.update(p.Answer.ID, func(old []*conversation) []*conversation {
			for _, o := range old {
				if o.last == c.last && o.answers == c.answers && maps.Equal(o.defaults, c.defaults) {
					return old
				}
			}
			if len(old) >= maxBases {
				return old
			}
			return append(old, c)
		})
	}
}

// maxBases bounds the positions one response id names.
const maxBases = 8

// clone returns a private copy of c, which must not change meanwhile.
func (c *conversation) clone() *conversation {
	return &conversation{
		name: c.name, last: c.last, answers: c.answers,
		defaults: maps.Clone(c.defaults), calls: c.calls.clone(),
	}
}

// describe says where c stands, for a miss.
func (c *conversation) describe(p *program) string {
	if c.last < 0 {
		return "at the start"
	}
	s := "s"
	if c.answers == 1 {
		s = ""
	}
	return fmt.Sprintf("after step %q, %d answer%s", p.steps[c.last].id, c.answers, s)
}

// entryIndex finds the entry steps that may answer a conversation's first
// request without trying each: those whose latest-user condition is an
// equals are indexed by its value (by its hash: the condition, tried on
// each candidate, checks the value itself).
type entryIndex struct {
	byUser hashIndex
	loose  []int // the other entries
}

func indexEntries(p *program, seed maphash.Seed) entryIndex {
	var ix entryIndex
	var values []string
	var steps []int
	for _, i := range p.entries {
		if st := &p.steps[i]; st.userEqAt >= 0 {
			values, steps = append(values, st.userEq), append(steps, i)
		} else {
			ix.loose = append(ix.loose, i)
		}
		if p.steps[i].silent {
			p.silentEntries = append(p.silentEntries, i)
		}
	}
	ix.byUser = newHashIndex(seed, values, steps)
	return ix
}

// userEquals returns the value of the first latest-user equals condition
// and its index in conds, or -1.
func userEquals(conds []condition) (string, int) {
	for k, c := range conds {
		if t, ok := c.(*textCond); ok && t.name == "latest-user" && t.op == OpEquals {
			return t.value, k
		}
	}
	return "", -1
}

// lookupAll looks up in the indexes what a request's position is found
// by: the writers of each answer it echoes. With many steps each lookup
// reads a slot at a place no earlier read predicts, out of the cache; made
// with the hashes ready and nothing between them that waits for what they
// read, the reads are in flight together and cost about one. A request
// that echoes no answer stands at the start, and the entries its latest
// user text may start are looked up here; one that echoes answers mostly
// goes on to the candidates its step names, and looks the entries up only
// when picking needs them (startsOf): a read it would not use costs as
// much as one it does.
func (p *program) lookupAll(ws []written, v *view) {
	if len(ws) == 0 {
		p.lookupStarts(v)
		return
	}
	for i := range ws {
		ws[i].writers = p.writers.lookup(ws[i].key, &ws[i].one)
	}
	for i := range ws {
		ws[i].writers = p.filed(ws[i].writers, false, ws[i].text)
	}
}

// hashAll hashes the index keys of the answers a request echoes and asks
// for the slots lookupAll will read to be fetched meanwhile (for a request
// that echoes none, the entries' slot of its latest user text): the work
// between (naming the conversation) then hides the reads from memory,
// which a load cannot (it holds back what follows it until it is done).
func (p *program) hashAll(ws []written, v *view) {
	if ix := &p.starts.byUser; len(ws) == 0 && v.userFound {
		ix.prefetch(ix.hash(v.user))
	}
	for i := range ws {
		ws[i].key = ws[i].hash(&p.writers)
		p.writers.prefetch(ws[i].key)
	}
}

// startsOf returns the entries that may answer v, in file order, looked
// up once a view.
func (p *program) startsOf(v *view) []int {
	if !v.startsRead {
		p.lookupStarts(v)
	}
	return v.starts
}

// lookupStarts looks up the entries that may answer v (those filed under
// its latest user text, and the loose ones), keeps them in v and warms the
// first found.
func (p *program) lookupStarts(v *view) {
	ix := &p.starts
	var eq []int
	if v.userFound && len(ix.byUser.slots) > 0 {
		eq = ix.byUser.lookup(ix.byUser.hash(v.user), &v.startOne)
	}
	if len(eq) > 0 {
		v.warmed = p.steps[eq[0]].warm()
	}
	v.starts, v.startsRead = ix.merge(p.filed(eq, true, v.user)), true
}

// filed returns the steps of hits filed under k, in order: by their echo,
// or, if user, by their latest-user equals value (an index lookup may
// return steps of another key with the same hash). Only when it leaves
// one out does it allocate.
func (p *program) filed(hits []int, user bool, k string) []int {
	key := func(i int) string {
		if user {
			return p.steps[i].userEq
		}
		return p.steps[i].echo
	}
	for n, i := range hits {
		if key(i) == k {
			continue
		}
		out := slices.Clone(hits[:n])
		for _, i := range hits[n+1:] {
			if key(i) == k {
				out = append(out, i)
			}
		}
		return out
	}
	return hits
}

// merge returns the entries eq, found by the latest user text, and the
// loose ones, in file order.
func (ix *entryIndex) merge(eq []int) []int {
	if len(eq) == 0 {
		return ix.loose
	}
	if len(ix.loose) == 0 {
		return eq
	}
	out := make([]int, 0, len(eq)+len(ix.loose))
	a, b := eq, ix.loose
	for len(a) > 0 && len(b) > 0 {
		if a[0] < b[0] {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// derivation is what an answer made from the request is made from, besides
// the latest user text before it (written.user): the request's model,
// system prompt and the schema it asks for, which every request of a
// conversation sends again.
type derivation struct {
	req     *Request
	model   string
	out     wire.Output
	outRead bool
}

// output returns the structured output the request asks for, read once;
// a body it cannot be read from asks for none.
func (d *derivation) output() wire.Output {
	if !d.outRead {
		d.out, _ = wire.OutputOf(d.req.Parsed.Kind, d.req.Body)
		d.outRead = true
	}
	return d.out
}

// derives reports whether step i, whose answer is made from the request,
// wrote w in c, by making that answer again from what preceded w, and
// returns the calls it made. Its conditions are not checked (they held).
func (e *Engine) derives(c *conversation, i int, w *written, d *derivation) ([]ccall, bool) {
	st := &e.prog.steps[i]
	m := st.rest()
	if j := m.answer.JSON; j != nil {
		return e.derivesJSON(c, j, w, d)
	}
	text := m.gen.text(generated{user: w.user, model: d.model, system: d.req.Parsed.System})
	if textKey(text) != w.text {
		return nil, false
	}
	return m.calls, e.writes(c, m.calls, w)
}

// derivesJSON reports whether a json answer wrote w: its value (generate:
// the value made for the schema the request asks for) as the text, or as
// the arguments of the one tool a request forced.
func (e *Engine) derivesJSON(c *conversation, j *JSONAnswer, w *written, d *derivation) ([]ccall, bool) {
	value := []byte(j.Value)
	if j.Generate {
		out := d.output()
		if out.Schema == nil {
			return nil, false
		}
		entry := e.schemas.get(out.Schema)
		if entry.err != nil {
			return nil, false
		}
		var err error
		if value, err = entry.generated(out.Schema); err != nil {
			return nil, false
		}
	}
	if len(w.calls) == 0 {
		return nil, w.text == textKey(string(value))
	}
	if w.text != "" || len(w.calls) != 1 || !jsonvalue.Valid(value) {
		return nil, false
	}
	calls := []ccall{{name: w.calls[0].Name, args: canonicalArgs(value)}}
	return calls, e.writes(c, calls, w)
}

// answerModel is the model an answer to req names: the request's, else the
// scenario's, else DefaultModel.
func (p *program) answerModel(req *Request) string {
	switch {
	case req.Parsed.Model != "":
		return req.Parsed.Model
	case p.model != "":
		return p.model
	}
	return DefaultModel
}

// warm reads a field in each cache line of st (its two, for a plain
// answer) and returns what it read: picking and preparing then find the
// step's lines on their way from memory, read together with the index
// checks instead of one after another.
func (st *cstep) warm() int {
	n := len(st.next) + len(st.text)
	if m := st.more; m != nil {
		a := &m.answer
		n += len(m.calls) + len(a.Reasoning) + len(a.ID) + int(a.Delay) + a.CutAfter
	}
	return n
}
