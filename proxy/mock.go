package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// mockState is what mock mode keeps beside its engines: the fixtures of the
// calls it answered with, by call id, for GET /_llmproxy/fixtures/{id}.
type mockState struct {
	engines map[string]*scenario.Engine
	files   map[string]string // by scenario name, where known
	names   []string          // sorted

	mu       sync.Mutex
	fixtures map[string][]byte
	turns    map[string]*turn // by scenario and conversation, while in use
}

// turn lets one request of a conversation at a time be answered, so that a
// client that sends its next request the moment it holds the whole answer
// meets the conversation moved on.
type turn struct {
	sem  chan struct{}
	refs int
}

func newMockState(engines map[string]*scenario.Engine, files map[string]string) *mockState {
	m := &mockState{engines: engines, files: files, fixtures: map[string][]byte{}, turns: map[string]*turn{}}
	for name := range engines {
		m.names = append(m.names, name)
	}
	slices.Sort(m.names)
	return m
}

// checkSources checks that cfg names what its mode serves from: scenarios
// in mock mode, else exactly one of a cassette and a cassette directory.
func checkSources(cfg Config) error {
	if cfg.Mode == ModeMock {
		if len(cfg.Scenarios) == 0 {
			return fmt.Errorf("mock mode needs at least one scenario: %w", ErrConfig)
		}
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
	if (cfg.Cassette == nil) == (cfg.CassetteDir == "") {
		return fmt.Errorf("set exactly one of Cassette and CassetteDir: %w", ErrConfig)
	}
	return nil
}

// take waits for the conversation's turn; the returned function ends it.
// It fails when ctx ends first.
func (m *mockState) take(ctx context.Context, scenarioName, conv string) (func(), error) {
	key := scenarioName + "\x00" + conv
	m.mu.Lock()
	t, ok := m.turns[key]
	if !ok {
		t = &turn{sem: make(chan struct{}, 1)}
		m.turns[key] = t
	}
	t.refs++
	m.mu.Unlock()
	drop := func() {
		m.mu.Lock()
		if t.refs--; t.refs == 0 {
			delete(m.turns, key)
		}
		m.mu.Unlock()
	}
	select {
	case t.sem <- struct{}{}:
		return func() { <-t.sem; drop() }, nil
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	}
}

// turnKey is what requests answered one at a time share: the conversation
// the header names, else (the position read from the request) the body.
func turnKey(conv string, body []byte) string {
	if conv != "" {
		return "conversation\x00" + conv
	}
	k := scenario.RequestKey(body)
	return "request\x00" + string(k[:])
}

// engine returns the engine a request names, or the message of a 400.
func (m *mockState) engine(r *http.Request) (*scenario.Engine, string) {
	name := r.Header.Get(ScenarioHeader)
	if name == "" {
		if len(m.names) == 1 {
			return m.engines[m.names[0]], ""
		}
		return nil, fmt.Sprintf("llmproxy: mock serves several scenarios (%s): name one with the %s header",
			strings.Join(m.names, ", "), ScenarioHeader)
	}
	if e, ok := m.engines[name]; ok {
		return e, ""
	}
	return nil, fmt.Sprintf("llmproxy: %s %q names no scenario served; the scenarios are: %s",
		ScenarioHeader, name, strings.Join(m.names, ", "))
}

// chatKind reports whether mock answers requests of kind.
func chatKind(kind wire.Kind) bool {
	switch kind {
	case wire.KindOpenAIChat, wire.KindOpenAIResponses, wire.KindAnthropicMessages, wire.KindGemini, wire.KindOllama:
		return true
	}
	return false
}

// mockExchange is one request mock mode is answering.
type mockExchange struct {
	start time.Time
	req   *http.Request
	route route
	kind  wire.Kind
	body  []byte
	conv  string
	eng   *scenario.Engine
	// parsed is the request as wire read it, once it has been; nil before.
	parsed *wire.Request
}

// entry is the log entry of the exchange, ending now.
func (x *mockExchange) entry(status int, step, miss string) LogEntry {
	e := LogEntry{
		Time: x.start.UTC(), Method: x.req.Method, Upstream: x.route.name, Path: x.route.path,
		Kind: string(x.kind), Status: status, Miss: miss, Conversation: x.conv, Step: step,
		Millis: float64(time.Since(x.start).Microseconds()) / 1000,
	}
	if x.eng != nil {
		e.Scenario = x.eng.Name()
	}
	switch {
	case x.parsed != nil:
		e.summarizeParsed(x.parsed)
	case chatKind(x.kind):
		e.summarize(x.kind, x.route.path, x.body)
	}
	return e
}

// serveMock answers a request, whose body was read, from the scenario it
// names.
func (s *Server) serveMock(w http.ResponseWriter, r *http.Request, start time.Time, rt route, kind wire.Kind, body []byte) {
	x := &mockExchange{start: start, req: r, route: rt, kind: kind, body: body, conv: r.Header.Get(ConversationHeader)}
	eng, msg := s.mock.engine(r)
	if eng == nil {
		s.mockRefuse(w, x, http.StatusBadRequest, msg)
		return
	}
	x.eng = eng
	if !chatKind(kind) {
		s.mockRefuse(w, x, http.StatusBadRequest, fmt.Sprintf(
			"llmproxy: scenario %s: %s %s is not a chat API mock answers (OpenAI chat completions or Responses, Anthropic messages, Gemini generateContent, Ollama /api/chat)",
			eng.Name(), r.Method, cassette.ProxyPath(rt.name, rt.path)))
		return
	}
	if !json.Valid(body) {
		s.mockRefuse(w, x, http.StatusBadRequest, fmt.Sprintf("llmproxy: scenario %s: %s", eng.Name(), jsonProblem(match.ErrMalformedJSON, body)))
		return
	}
	path := rt.path
	if r.URL.RawQuery != "" {
		path += "?" + r.URL.RawQuery
	}
	parsed, err := wire.ParseRequest(kind, path, body)
	if err != nil {
		s.mockRefuse(w, x, http.StatusBadRequest, fmt.Sprintf("llmproxy: scenario %s: %v", eng.Name(), err))
		return
	}
	x.parsed = &parsed
	opts := wire.OptionsOf(kind, path, parsed, body)
	done, err := s.mock.take(r.Context(), eng.Name(), turnKey(x.conv, body))
	if err != nil {
		return // the client left while an earlier request of its conversation was answered
	}
	defer done()
	p, err := eng.Answer(scenario.Request{Conversation: x.conv, Parsed: parsed, Body: body})
	var miss *scenario.Miss
	if errors.As(err, &miss) {
		x.conv = miss.Conversation
	}
	if err != nil {
		s.mockMiss(w, x, err)
		return
	}
	x.conv = p.Conversation
	s.deliver(w, x, p, opts)
}

// mockRefuse answers a request mock cannot take, and logs it.
func (s *Server) mockRefuse(w http.ResponseWriter, x *mockExchange, status int, msg string) {
	s.log.WarnContext(x.req.Context(), "refused", "api", string(x.kind), "method", x.req.Method, "path", x.route.path, "status", status, "reason", msg)
	s.journal.add(x.entry(status, "", msg))
	s.fail(w, x.kind, status, "invalid_request_error", msg)
}

// mockMiss answers a request no step answers: 400, MissHeader, type
// scenario_miss and the engine's message.
func (s *Server) mockMiss(w http.ResponseWriter, x *mockExchange, err error) {
	msg := "llmproxy: " + err.Error()
	if !errors.Is(err, scenario.ErrMiss) {
		s.mockRefuse(w, x, http.StatusBadRequest, msg)
		return
	}
	s.missed(msg)
	s.log.WarnContext(x.req.Context(), "miss", "scenario", x.eng.Name(), "conversation", x.conv, "reason", msg)
	s.journal.add(x.entry(http.StatusBadRequest, "", msg))
	w.Header().Set(MissHeader, "1")
	s.fail(w, x.kind, http.StatusBadRequest, "scenario_miss", msg)
}

// deliver writes a pending answer and commits it once it reached the client
// whole. A step that cuts its stream closes the connection after its events
// and counts as delivered once they were.
func (s *Server) deliver(w http.ResponseWriter, x *mockExchange, p *scenario.Pending, opts wire.WriteOptions) {
	written, err := s.written(x.kind, p, opts)
	if err != nil {
		s.mockRefuse(w, x, http.StatusInternalServerError, fmt.Sprintf("llmproxy: scenario %s, step %s: %v", p.Scenario, p.Step, err))
		return
	}
	scripted := s.cfg.Pace != PaceInstant
	ctx := x.req.Context()
	if scripted && !sleep(ctx, p.Delay) || !scripted && contextDone(ctx) {
		s.mockIncomplete(x, p, written.Status)
		return
	}
	h := w.Header()
	for k, vs := range written.Header {
		h[k] = append([]string(nil), vs...)
	}
	var settled func()
	defer func() {
		if settled != nil {
			settled()
		}
	}()
	if !written.Streamed() {
		h.Set("Content-Length", strconv.Itoa(len(written.Body)))
		settled = s.journal.begin(nil, true).close
		w.WriteHeader(written.Status)
		_, err := w.Write(written.Body)
		if err == nil {
			err = http.NewResponseController(w).Flush()
		}
		s.mockDone(x, p, written.Status, err == nil)
		return
	}
	cut := p.CutAfter > 0 && p.CutAfter < len(written.Events)
	events := written.Events
	if cut {
		events = events[:p.CutAfter]
	}
	if !s.stream(ctx, w, written.Status, events, scripted, p.Stream.Interval, func() { settled = s.journal.begin(nil, true).close }) {
		s.mockDone(x, p, written.Status, false)
		return
	}
	s.mockDone(x, p, written.Status, true)
	if cut {
		settled()
		settled = nil
		panic(http.ErrAbortHandler) // the connection closes mid-stream
	}
}

// stream writes events with a flush after each, interval apart when
// scripted; last is called just before the final write. It reports whether
// every event reached the client.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, status int, events []wire.Event, scripted bool, interval time.Duration, last func()) bool {
	rc := http.NewResponseController(w)
	if len(events) == 0 {
		last()
	}
	w.WriteHeader(status)
	for n, e := range events {
		if n > 0 && scripted && !sleep(ctx, interval) || contextDone(ctx) {
			return false
		}
		if n == len(events)-1 {
			last()
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

// written is a pending answer as the provider of kind writes it.
func (s *Server) written(kind wire.Kind, p *scenario.Pending, opts wire.WriteOptions) (wire.Written, error) {
	if e := p.Error; e != nil {
		return wire.WriteError(kind, wire.ErrorAnswer{Status: e.Status, Type: e.Type, Message: e.Message, RetryAfter: e.RetryAfter})
	}
	opts.Chunk = p.Stream.Chunk
	return wire.Write(kind, p.Answer, opts)
}

// mockDone commits a delivered answer, keeps its fixtures for the fixtures
// endpoint, and logs it.
func (s *Server) mockDone(x *mockExchange, p *scenario.Pending, status int, delivered bool) {
	if !delivered {
		s.mockIncomplete(x, p, status)
		return
	}
	p.Commit()
	s.mock.keep(p)
	if s.log.Enabled(x.req.Context(), slog.LevelDebug) {
		s.log.DebugContext(x.req.Context(), "mocked", "scenario", p.Scenario, "conversation", p.Conversation, "step", p.Step, "api", string(x.kind), "status", status)
	}
	e := x.entry(status, p.Step, "")
	if p.Error == nil {
		e.ToolCalls = cassette.ToolCalls(p.Answer.ToolCalls)
	}
	s.journal.add(e)
}

// mockIncomplete logs an answer the client did not receive whole; its step
// stays where it was.
func (s *Server) mockIncomplete(x *mockExchange, p *scenario.Pending, status int) {
	s.log.InfoContext(x.req.Context(), "client left", "scenario", p.Scenario, "conversation", p.Conversation, "step", p.Step)
	e := x.entry(status, p.Step, "")
	e.Incomplete = true
	s.journal.add(e)
}

// keep remembers the fixtures an answer called, by call id.
func (m *mockState) keep(p *scenario.Pending) {
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
	out := map[string][]string{}
	for _, name := range s.mock.names {
		if u := s.mock.engines[name].Unused(); len(u) > 0 {
			out[name] = u
		}
	}
	return out
}

// graphs describes the scenarios served, for the web view; nil outside
// mock mode.
func (m *mockState) graphs() []view.Graph {
	if m == nil {
		return nil
	}
	out := make([]view.Graph, 0, len(m.names))
	for _, name := range m.names {
		e := m.engines[name]
		out = append(out, view.ScenarioGraph(e.Scenario(), m.files[name], e.Answered()))
	}
	return out
}

func (s *Server) handleMockUnused(w http.ResponseWriter, r *http.Request) {
	if s.journal.settle(r.Context(), nil) != nil {
		return
	}
	type unused struct {
		Scenario string   `json:"scenario"`
		Steps    []string `json:"steps"`
	}
	out := []unused{}
	for _, name := range s.mock.names {
		steps := s.mock.engines[name].Unused()
		if steps == nil {
			steps = []string{}
		}
		out = append(out, unused{Scenario: name, Steps: steps})
	}
	writeJSON(w, http.StatusOK, map[string]any{"unused": out})
}

func (s *Server) handleMockInteractions(w http.ResponseWriter, r *http.Request) {
	apiError(w, http.StatusNotFound, "not_found",
		"llmproxy: mock serves scenarios, not a cassette: it has no interactions (see GET /_llmproxy/log and /_llmproxy/unused)")
}

func (s *Server) handleMockFixture(w http.ResponseWriter, r *http.Request) {
	if s.journal.settle(r.Context(), nil) != nil {
		return
	}
	id := mux.Vars(r)["call_id"]
	s.mock.mu.Lock()
	content, ok := s.mock.fixtures[id]
	s.mock.mu.Unlock()
	if !ok {
		apiError(w, http.StatusNotFound, "not_found", "llmproxy: no scenario answer has called a fixture with call id "+id)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(content)
}
