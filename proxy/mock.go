package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/scenario"
	"github.com/llmproxy/llmproxy/view"
	"github.com/llmproxy/llmproxy/wire"
)

// Mock mode: every request is answered by a scenario's engine, written in
// the request's own provider format by package wire, streamed when the
// request streams. A step is committed only once its answer reached the
// client whole (or, for a step that cuts its stream, once the events before
// the cut did), so a client that leaves consumes nothing.

const (
	// ScenarioHeader picks the scenario of a request when mock serves
	// several.
	ScenarioHeader = "X-Llmproxy-Scenario"
	// ConversationHeader names the conversation of a request, whose
	// position the engine then keeps; without it the position is read from
	// the request itself (package scenario).
	ConversationHeader = "X-Llmproxy-Conversation"
	// maxMockFixtures bounds the call ids the fixtures endpoint remembers.
	maxMockFixtures = 100000
)

// mocker is mock mode: the Server hands it every proxied request, whose
// body was read, and the mock side of the API (unused steps, fixtures). It
// holds what it shares with the Server (the journal, the logger, the
// redactor, the pace, the miss hook) and nothing of recording or replaying,
// and keeps beside its engines the fixtures of the calls it answered with,
// by call id, for GET /_llmproxy/fixtures/{id}.
type mocker struct {
	// set is the scenarios served, replaced whole by POST
	// /_llmproxy/scenarios and DELETE (see put and reset).
	set atomic.Pointer[scenarioSet]

	journal  *journal
	log      *slog.Logger
	redactor *cassette.Redactor
	instant  bool         // --pace instant: no delay, no interval
	onMiss   func(string) // Config.OnMiss; nil for none

	mu       sync.Mutex
	fixtures map[string][]byte
	turns    map[turnKey]*turn // while in use
	spare    []*turn           // turns no longer in use, for reuse

	// streams holds the buffers answers are laid out in (wire's
	// WriteOptions.Buffer) and unpaced streams joined in (*[]byte).
	streams sync.Pool
	// eventLists holds the lists a stream's events are laid out in
	// (WriteOptions.EventBuffer; *[]wire.Event), emptied.
	eventLists sync.Pool
}

const (
	// maxPooledStream bounds the buffers kept in mocker.streams: a larger
	// one is used once and left to the collector.
	maxPooledStream = 64 << 10
	// maxPooledEvents bounds the lists kept in mocker.eventLists.
	maxPooledEvents = 4096
)

// scenarioSet is the scenarios mock serves by name; it is never changed
// once stored, only replaced.
type scenarioSet struct {
	engines map[string]*scenario.Engine
	files   map[string]string // by scenario name, where known
	names   []string          // sorted
}

func newScenarioSet(engines map[string]*scenario.Engine, files map[string]string) *scenarioSet {
	set := &scenarioSet{engines: engines, files: files}
	for name := range engines {
		set.names = append(set.names, name)
	}
	slices.Sort(set.names)
	return set
}

// put serves e beside the scenarios served, in place of the one of its
// name; file is where it was loaded from. Callers serialize puts and resets.
func (m *mocker) put(e *scenario.Engine, file string) {
	old := m.set.Load()
	engines, files := maps.Clone(old.engines), maps.Clone(old.files)
	if engines == nil {
		engines = map[string]*scenario.Engine{}
	}
	if files == nil {
		files = map[string]string{}
	}
	engines[e.Name()], files[e.Name()] = e, file
	m.set.Store(newScenarioSet(engines, files))
}

// reset starts every conversation of the scenarios served over, and
// returns how many scenarios there are.
func (m *mocker) reset() (int, error) {
	old := m.set.Load()
	engines := make(map[string]*scenario.Engine, len(old.engines))
	for name, e := range old.engines {
		fresh, err := scenario.NewEngine(e.Scenario())
		if err != nil {
			return 0, fmt.Errorf("scenario %s: %w", name, err)
		}
		engines[name] = fresh
	}
	m.set.Store(newScenarioSet(engines, old.files))
	return len(engines), nil
}

// turn lets one request of a conversation at a time be answered, so that a
// client that sends its next request the moment it holds the whole answer
// meets the conversation moved on.
type turn struct {
	sem  chan struct{}
	refs int
}

// newMocker serves cfg's scenarios, logging to j and log, and redacting with
// r what it reports of a request.
func newMocker(cfg Config, j *journal, log *slog.Logger, r *cassette.Redactor) *mocker {
	m := &mocker{journal: j, log: log, redactor: r,
		instant: cfg.Pace == PaceInstant, onMiss: cfg.OnMiss, fixtures: map[string][]byte{}, turns: map[turnKey]*turn{}}
	m.set.Store(newScenarioSet(cfg.Scenarios, cfg.ScenarioFiles))
	return m
}

// checkSources checks that cfg names what its mode serves from: scenarios
// (none, until the API loads some) in mock mode, else at most one of a
// cassette and a cassette directory (neither: only sessions serve).
func checkSources(cfg Config) error {
	if cfg.Mode == ModeMock {
		if cfg.Cassette != nil || cfg.CassetteDir != "" {
			return fmt.Errorf("mock mode serves scenarios and takes no cassette: %w", ErrConfig)
		}
		for name, e := range cfg.Scenarios {
			if e == nil {
				return fmt.Errorf("scenario %q has no engine: %w", name, ErrConfig)
			}
		}
		return nil
	}
	if len(cfg.Scenarios) > 0 {
		return fmt.Errorf("scenarios are served only in mock mode, not %s: %w", cfg.Mode, ErrConfig)
	}
	if cfg.Cassette != nil && cfg.CassetteDir != "" {
		return fmt.Errorf("set at most one of Cassette and CassetteDir: %w", ErrConfig)
	}
	return nil
}

// take waits for the turn of the requests that share key, and returns it;
// m.give ends it. It fails when ctx ends first.
func (m *mocker) take(ctx context.Context, key turnKey) (*turn, error) {
	m.mu.Lock()
	t, ok := m.turns[key]
	if !ok {
		if n := len(m.spare); n > 0 {
			t, m.spare = m.spare[n-1], m.spare[:n-1]
		} else {
			t = &turn{sem: make(chan struct{}, 1)}
		}
		m.turns[key] = t
	}
	t.refs++
	m.mu.Unlock()
	select {
	case t.sem <- struct{}{}:
		return t, nil
	case <-ctx.Done():
		m.drop(key, t)
		return nil, ctx.Err()
	}
}

// give ends a turn take returned.
func (m *mocker) give(key turnKey, t *turn) {
	<-t.sem
	m.drop(key, t)
}

// drop lets go of t, which take returned for key or gave up waiting for;
// the last to let go forgets it, and keeps it for a later key while fewer
// than maxSpareTurns are kept (its sem is then empty: every holder gave it
// back before letting go).
func (m *mocker) drop(key turnKey, t *turn) {
	m.mu.Lock()
	if t.refs--; t.refs == 0 {
		delete(m.turns, key)
		if len(m.spare) < maxSpareTurns {
			m.spare = append(m.spare, t)
		}
	}
	m.mu.Unlock()
}

// maxSpareTurns bounds the turns kept for reuse: about as many as
// conversations answered at once.
const maxSpareTurns = 256

// turnKey is what requests answered one at a time share: their scenario
// and the conversation the header names, else (the position read from the
// request) the body's key.
type turnKey struct {
	scenario, conv string
	body           [32]byte // scenario.RequestKey of the body when conv is ""
}

// turnOf is the turnKey of a request of the named scenario.
func turnOf(scenarioName, conv string, body []byte) turnKey {
	if conv != "" {
		return turnKey{scenario: scenarioName, conv: conv}
	}
	return turnKey{scenario: scenarioName, body: scenario.RequestKey(body)}
}

// noScenario is the miss of a request when mock serves no scenario.
const noScenario = "llmproxy: no scenario: PUT /_llmproxy/session or POST /_llmproxy/scenarios to load one, or start mock with --scenario FILE"

// engine returns the engine a request names (without the header: the
// session's, if one is open, else the only scenario served), or the
// message of a 400.
func (m *mocker) engine(r *http.Request, se *session) (*scenario.Engine, string) {
	set := m.set.Load()
	name := r.Header.Get(ScenarioHeader)
	if name == "" {
		if se != nil {
			return se.engine.Load(), ""
		}
		switch len(set.names) {
		case 0:
			return nil, noScenario
		case 1:
			return set.engines[set.names[0]], ""
		}
		return nil, fmt.Sprintf("llmproxy: mock serves several scenarios (%s): name one with the %s header",
			strings.Join(set.names, ", "), ScenarioHeader)
	}
	if e, ok := set.engines[name]; ok {
		return e, ""
	}
	return nil, fmt.Sprintf("llmproxy: %s %q names no scenario served; the scenarios are: %s",
		ScenarioHeader, name, strings.Join(set.names, ", "))
}

// mockExchange is one request mock mode is answering.
type mockExchange struct {
	start time.Time
	req   *http.Request
	route route
	kind  wire.Kind
	body  []byte
	// logged and loggedPath are body and the route's path with their
	// secrets redacted, as replay logs a request.
	logged     []byte
	loggedPath string
	conv       string
	eng        *scenario.Engine
	stats      *sessionStats // the session's, when it answers
	// parsed is the request as read, once it was (hasParsed); the entry
	// summarises it instead of parsing logged again when redaction left
	// the body as it was.
	parsed    wire.Request
	hasParsed bool
}

// entry is the log entry of the exchange, ending now.
func (x *mockExchange) entry(status int, step, miss string) logged {
	e := logged{LogEntry: LogEntry{
		Time: x.start.UTC(), Method: x.req.Method, Upstream: x.route.name, Path: x.loggedPath,
		Kind: string(x.kind), Status: status, Miss: miss, Conversation: x.conv, Step: step,
		Millis: float64(time.Since(x.start).Microseconds()) / 1000,
	}}
	if x.eng != nil {
		e.Scenario = x.eng.Name()
	}
	switch {
	case !x.kind.CallsTools():
	case x.hasParsed && sameBytes(x.logged, x.body):
		e.summarizeParsed(&x.parsed)
	default:
		e.summarize(x.kind, x.route.path, x.logged)
	}
	return e
}

// sameBytes reports whether a and b are the same slice (redaction that
// changed nothing returns its input).
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// serve answers a request, whose body was read, from the scenario it
// names.
func (m *mocker) serve(w http.ResponseWriter, r *http.Request, start time.Time, rt route, kind wire.Kind, body []byte, se *session, choose faultChooser) {
	// What mock reports of a request (answers, log lines, the journal) is
	// redacted as replay's is; the engine reads the request as sent.
	x := &mockExchange{start: start, req: r, route: rt, kind: kind, body: body,
		loggedPath: m.redactor.Path(rt.path), logged: m.redactor.Body(body), conv: r.Header.Get(ConversationHeader)}
	eng, msg := m.engine(r, se)
	if se != nil && r.Header.Get(ScenarioHeader) == "" {
		x.stats = se.stats
	}
	if eng == nil && msg == noScenario {
		m.miss(w, x, errors.New(strings.TrimPrefix(msg, "llmproxy: ")))
		return
	}
	if eng == nil {
		m.refuse(w, x, http.StatusBadRequest, msg)
		return
	}
	x.eng = eng
	if !kind.CallsTools() {
		m.refuse(w, x, http.StatusBadRequest, fmt.Sprintf(
			"llmproxy: scenario %s: %s %s is not a chat API mock answers (OpenAI chat completions or Responses, Anthropic messages, Gemini generateContent, Ollama /api/chat and /api/generate, Bedrock Converse, Bedrock InvokeModel with an Anthropic body)",
			eng.Name(), r.Method, cassette.ProxyPath(rt.name, rt.path)))
		return
	}
	path := rt.path
	if r.URL.RawQuery != "" {
		path += "?" + r.URL.RawQuery
	}
	// The body is checked once, by ParseRequest, whose check accepts a body
	// exactly when json.Valid does (wire's TestCheckJSONIsJSONValid); a
	// body it refuses is told apart only then.
	parsed, err := wire.ParseRequest(kind, path, body)
	if err == nil {
		err = wire.Answerable(kind, body)
	}
	if err != nil {
		msg := err.Error()
		if !json.Valid(body) {
			msg = jsonProblem(match.ErrMalformedJSON, body)
		}
		m.refuse(w, x, http.StatusBadRequest, fmt.Sprintf("llmproxy: scenario %s: %s", eng.Name(), msg))
		return
	}
	if path == rt.path { // the log summarises the path without its query
		x.parsed, x.hasParsed = parsed, true
	}
	opts := wire.OptionsOf(kind, path, parsed, body)
	key := turnOf(eng.Name(), x.conv, body)
	t, err := m.take(r.Context(), key)
	if err != nil {
		return // the client left while an earlier request of its conversation was answered
	}
	defer m.give(key, t)
	p, err := eng.Answer(scenario.Request{Conversation: x.conv, Parsed: parsed, Body: body})
	if err != nil {
		var miss *scenario.Miss
		if errors.As(err, &miss) {
			x.conv = miss.Conversation
		}
		m.miss(w, x, err)
		return
	}
	x.conv = p.Conversation
	if choose != nil {
		if pick := choose(eng.Name(), p.Conversation); pick.f != nil {
			m.deliverFault(w, x, p, opts, pick)
			return
		}
	}
	m.deliver(w, x, p, opts)
}

// refuse answers a request mock cannot take, and logs it; key-shaped
// strings in msg are redacted. Such a request (a path no wire knows, a body
// that does not parse, no scenario named) is one mock could not answer as
// asked: a miss for Config.OnMiss, as a request replay cannot route is.
func (m *mocker) refuse(w http.ResponseWriter, x *mockExchange, status int, msg string) {
	msg = cassette.RedactKeysString(msg)
	if m.onMiss != nil {
		m.onMiss(msg)
	}
	x.stats.miss(x.req.Method, cassette.ProxyPath(x.route.name, x.loggedPath), msg)
	m.log.WarnContext(x.req.Context(), "refused", "api", string(x.kind), "method", x.req.Method, "path", cassette.ProxyPath(x.route.name, x.loggedPath), "status", status, "reason", msg)
	m.journal.add(x.entry(status, "", msg))
	failWith(w, x.kind, status, "invalid_request_error", msg)
}

// miss answers a request no step answers: 400, MissHeader, type
// scenario_miss and the engine's message, its key-shaped strings redacted.
func (m *mocker) miss(w http.ResponseWriter, x *mockExchange, err error) {
	msg := cassette.RedactKeysString("llmproxy: " + err.Error())
	if !errors.Is(err, scenario.ErrMiss) && x.eng != nil {
		m.refuse(w, x, http.StatusBadRequest, msg)
		return
	}
	if m.onMiss != nil {
		m.onMiss(msg)
	}
	x.stats.miss(x.req.Method, cassette.ProxyPath(x.route.name, x.loggedPath), msg)
	scenarioName := ""
	if x.eng != nil {
		scenarioName = x.eng.Name()
	}
	m.log.WarnContext(x.req.Context(), "miss", "scenario", scenarioName, "conversation", x.conv, "reason", msg)
	m.journal.add(x.entry(http.StatusBadRequest, "", msg))
	w.Header().Set(MissHeader, "1")
	failWith(w, x.kind, http.StatusBadRequest, "scenario_miss", msg)
}

// deliver writes a pending answer and commits it once it reached the client
// whole. A step that cuts its stream closes the connection after its events
// and counts as delivered once they were; met by a request that does not
// stream, it closes the connection after the status and headers, before the
// body.
func (m *mocker) deliver(w http.ResponseWriter, x *mockExchange, p *scenario.Pending, opts wire.WriteOptions) {
	bp, ep := m.buffer(), m.eventList()
	opts.Buffer, opts.EventBuffer = *bp, *ep
	written, err := m.written(x.kind, p, opts)
	// The answer is written (net/http copies what it is given) and no
	// longer used once deliver returns: its memory serves the next.
	defer m.recycle(bp, written.Buffer())
	defer m.recycleEvents(ep, written.Events)
	if err != nil {
		m.refuse(w, x, http.StatusInternalServerError, fmt.Sprintf("llmproxy: scenario %s, step %s: %v", p.Scenario, p.Step, err))
		return
	}
	scripted := !m.instant
	ctx := x.req.Context()
	if scripted && !sleep(ctx, p.Delay) || !scripted && contextDone(ctx) {
		m.incomplete(x, p, written.Status)
		return
	}
	h := w.Header()
	for k, vs := range written.Header { // the writer's own, made for this answer
		h[k] = vs
	}
	sandbox(h)
	settled := settling{j: m.journal}
	defer settled.end()
	if !written.Streamed() {
		h.Set("Content-Length", strconv.Itoa(len(written.Body)))
		settled.begin()
		w.WriteHeader(written.Status)
		body := written.Body
		if p.CutAfter > 0 {
			body = nil // a cut answer that does not stream breaks before its body
		}
		_, err := w.Write(body)
		if err == nil {
			err = http.NewResponseController(w).Flush()
		}
		m.commit(x, p, written.Status, err == nil)
		if p.CutAfter > 0 && err == nil {
			settled.end()
			panic(http.ErrAbortHandler) // the connection closes where the body would be
		}
		return
	}
	cut := p.CutAfter > 0 && p.CutAfter < len(written.Events)
	events := written.Events
	if cut {
		events = events[:p.CutAfter]
	}
	joined, _ := written.JoinedPrefix(len(events))
	if !m.stream(ctx, w, written.Status, events, joined, scripted, p.Stream.Interval, cut, &settled) {
		m.commit(x, p, written.Status, false)
		return
	}
	m.commit(x, p, written.Status, true)
	if cut {
		settled.end()
		panic(http.ErrAbortHandler) // the connection closes mid-stream
	}
}

// settling is the journal bracket an answer opens just before its last
// write, so that the log waits for its entry, and closes once it is
// committed (or not).
type settling struct {
	j    *journal
	ref  bracketRef
	open bool
}

// begin opens the bracket.
func (s *settling) begin() {
	s.ref, s.open = s.j.begin(nil, true), true
}

// end closes the bracket, if it is open.
func (s *settling) end() {
	if s.open {
		s.open = false
		s.ref.close()
	}
}

// stream writes events and reports whether every one reached the client;
// last begins just before the final write. Paced (scripted, with an
// interval), it writes each event with a flush after it, interval apart.
// Otherwise every event is ready at once: they go out joined, the same
// bytes, in one write, from joined when the writer laid them out so (nil:
// joined here). That write is flushed only when the stream is cut (the
// connection is then aborted, which would drop what is still buffered);
// a whole stream's last bytes leave with the end of the chunked body,
// which net/http writes when the handler returns, so that an answer that
// fits its buffers reaches the client in one system call, not two (the
// bytes, then the five of the end).
func (m *mocker) stream(ctx context.Context, w http.ResponseWriter, status int, events []wire.Event, joined []byte, scripted bool, interval time.Duration, cut bool, last *settling) bool {
	if len(events) == 0 {
		last.begin()
	}
	w.WriteHeader(status)
	if len(events) == 0 {
		return true
	}
	rc := http.NewResponseController(w)
	if !scripted || interval <= 0 {
		return m.writeJoined(ctx, w, rc, events, joined, cut, last)
	}
	for n, e := range events {
		if n > 0 && !sleep(ctx, interval) || contextDone(ctx) {
			return false
		}
		if n == len(events)-1 {
			last.begin()
		}
		if _, err := w.Write(e.Raw); err != nil {
			return false
		}
		if rc.Flush() != nil {
			return false
		}
	}
	return true
}

// buffer returns a buffer from m.streams, or an empty one.
func (m *mocker) buffer() *[]byte {
	if bp, _ := m.streams.Get().(*[]byte); bp != nil {
		return bp
	}
	return new([]byte)
}

// recycle puts bp back into m.streams holding b, when b is not nil (else
// what it held), unless it is larger than maxPooledStream.
func (m *mocker) recycle(bp *[]byte, b []byte) {
	if b != nil {
		*bp = b[:0]
	}
	if cap(*bp) <= maxPooledStream {
		m.streams.Put(bp)
	}
}

// eventList returns a list from m.eventLists, or an empty one.
func (m *mocker) eventList() *[]wire.Event {
	if ep, _ := m.eventLists.Get().(*[]wire.Event); ep != nil {
		return ep
	}
	return new([]wire.Event)
}

// recycleEvents puts ep back into m.eventLists holding evs, the events of
// an answer no longer used (when not nil; else what it held), cleared so
// that it keeps no answer's bytes alive, unless it is longer than
// maxPooledEvents.
func (m *mocker) recycleEvents(ep *[]wire.Event, evs []wire.Event) {
	if evs != nil {
		clear(evs)
		*ep = evs[:0]
	}
	if cap(*ep) <= maxPooledEvents {
		m.eventLists.Put(ep)
	}
}

// writeJoined writes the Raw of events, at least one, in one write,
// flushed when flush is set: joined, when the writer laid them out so,
// else joined in a buffer from m.streams; last begins just before the
// write.
func (m *mocker) writeJoined(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, events []wire.Event, joined []byte, flush bool, last *settling) bool {
	if contextDone(ctx) {
		return false
	}
	if joined != nil {
		last.begin()
		_, err := w.Write(joined)
		if err == nil && flush {
			err = rc.Flush()
		}
		return err == nil
	}
	bp := m.buffer()
	b := (*bp)[:0]
	for _, e := range events {
		b = append(b, e.Raw...)
	}
	last.begin()
	_, err := w.Write(b)
	if err == nil && flush {
		err = rc.Flush()
	}
	m.recycle(bp, b)
	return err == nil
}

// written is a pending answer as the provider of kind writes it.
func (m *mocker) written(kind wire.Kind, p *scenario.Pending, opts wire.WriteOptions) (wire.Written, error) {
	if e := p.Error; e != nil {
		return wire.WriteError(kind, wire.ErrorAnswer{Status: e.Status, Type: e.Type, Message: e.Message, RetryAfter: e.RetryAfter})
	}
	opts.Chunk = p.Stream.Chunk
	return wire.Write(kind, p.Answer, opts)
}

// commit commits a delivered answer, keeps its fixtures for the fixtures
// endpoint, and logs it.
func (m *mocker) commit(x *mockExchange, p *scenario.Pending, status int, delivered bool) {
	if !delivered {
		m.incomplete(x, p, status)
		return
	}
	p.Commit()
	m.keep(p)
	x.stats.serve()
	if m.log.Enabled(x.req.Context(), slog.LevelDebug) {
		m.log.DebugContext(x.req.Context(), "mocked", "scenario", p.Scenario, "conversation", p.Conversation, "step", p.Step, "api", string(x.kind), "status", status)
	}
	e := x.entry(status, p.Step, "")
	if p.Error == nil {
		e.ToolCalls = cassette.ToolCalls(p.Answer.ToolCalls)
	}
	m.journal.add(e)
}

// incomplete logs an answer the client did not receive whole; its step
// stays where it was.
func (m *mocker) incomplete(x *mockExchange, p *scenario.Pending, status int) {
	m.log.InfoContext(x.req.Context(), "client left", "scenario", p.Scenario, "conversation", p.Conversation, "step", p.Step)
	e := x.entry(status, p.Step, "")
	e.Incomplete = true
	m.journal.add(e)
}

// keep remembers the fixtures an answer called, by call id.
func (m *mocker) keep(p *scenario.Pending) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range p.Fixtures {
		if _, ok := m.fixtures[f.Call.ID]; !ok && len(m.fixtures) >= maxMockFixtures {
			continue
		}
		m.fixtures[f.Call.ID] = f.Result.Content
	}
}

// UnusedSteps lists, by scenario name, the steps no conversation reached in
// this process; scenarios whose steps were all reached are left out. It is
// nil outside mock mode.
func (s *Server) UnusedSteps() map[string][]string {
	if s.mock == nil {
		return nil
	}
	return s.mock.unusedSteps()
}

// unusedSteps lists, by scenario name, the steps no conversation reached;
// scenarios whose steps were all reached are left out.
func (m *mocker) unusedSteps() map[string][]string {
	out := map[string][]string{}
	set := m.set.Load()
	for _, name := range set.names {
		if u := set.engines[name].Unused(); len(u) > 0 {
			out[name] = u
		}
	}
	return out
}

// graphs describes the scenarios served, for the web view; nil outside
// mock mode.
func (m *mocker) graphs() []view.Graph {
	if m == nil {
		return nil
	}
	set := m.set.Load()
	out := make([]view.Graph, 0, len(set.names))
	for _, name := range set.names {
		e := set.engines[name]
		out = append(out, view.ScenarioGraph(e.Scenario(), set.files[name], e.Answered()))
	}
	return out
}

func (m *mocker) handleUnused(w http.ResponseWriter, r *http.Request) {
	if m.journal.settle(r.Context(), nil) != nil {
		return
	}
	type unused struct {
		Scenario string   `json:"scenario"`
		Steps    []string `json:"steps"`
	}
	out := []unused{}
	set := m.set.Load()
	for _, name := range set.names {
		steps := set.engines[name].Unused()
		if steps == nil {
			steps = []string{}
		}
		out = append(out, unused{Scenario: name, Steps: steps})
	}
	writeJSON(w, http.StatusOK, map[string]any{"unused": out})
}

func (m *mocker) handleInteractions(w http.ResponseWriter, r *http.Request) {
	apiError(w, http.StatusNotFound, "not_found",
		"llmproxy: mock serves scenarios, not a cassette: it has no interactions (see GET /_llmproxy/log and /_llmproxy/unused)")
}

func (m *mocker) handleFixture(w http.ResponseWriter, r *http.Request) {
	if m.journal.settle(r.Context(), nil) != nil {
		return
	}
	id := mux.Vars(r)["call_id"]
	m.mu.Lock()
	content, ok := m.fixtures[id]
	m.mu.Unlock()
	if !ok {
		apiError(w, http.StatusNotFound, "not_found", "llmproxy: no scenario answer has called a fixture with call id "+id)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(content)
}
