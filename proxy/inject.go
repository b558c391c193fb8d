package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/faults"
	"github.com/llmproxy/llmproxy/scenario"
	"github.com/llmproxy/llmproxy/wire"
)

// Faults on demand: replay, auto (for answers served from the cassette) and
// mock inject the faults of Config.Faults, of the open session, or of a
// request's FaultHeader (with Config.AllowHeaderFaults) into the answers
// they serve. Which requests get one is decided by package faults from the
// seed, the fault and the request's number in its conversation. A faulted
// request does not use up its recording or scenario step unless the fault
// says consume, or it delivered the whole answer (slow, a stall that
// ended). A fault placed past the end of the answer (an event the stream
// does not have) is not injected, and the log says why.

// FaultHeader asks for a fault on one request (allowed by
// Config.AllowHeaderFaults): one fault per header line, as --fault writes it.
const FaultHeader = "X-Llmproxy-Fault"

// errHeaderFault marks a FaultHeader the proxy refuses (a 400).
var errHeaderFault = errors.New("fault header refused")

// faultPick is the fault chosen for a request, if any, and the request's
// number in its conversation.
type faultPick struct {
	f *faults.Fault
	n uint64
}

// inPlace reports whether p's fault may be written from a recording read
// in place, inside the cassette's read transaction, as an answer without a
// fault is: it neither waits (timeout, stall, slow would hold the
// transaction open) nor aborts the handler (cut, reset, timeout panic out
// of it). A request without a fault is written in place too.
func (p faultPick) inPlace() bool {
	return p.f == nil || p.f.Kind == faults.Status || p.f.Kind == faults.Malformed
}

// faultPlan is the plan a request's faults come from: its FaultHeader's,
// else its session's, else Config.Faults; nil when it has none. A header
// the proxy refuses is an error wrapping errHeaderFault.
func (s *Server) faultPlan(r *http.Request, se *session, mode Mode) (*faults.Plan, error) {
	if vs := r.Header[FaultHeader]; len(vs) > 0 {
		switch {
		case mode == ModeRecord:
			return nil, fmt.Errorf("llmproxy: %s: record never injects faults; faults are for replay, auto and mock: %w", FaultHeader, errHeaderFault)
		case !s.cfg.AllowHeaderFaults:
			return nil, fmt.Errorf("llmproxy: %s: faults from a request header are off; start llmproxy with --allow-header-faults to take them: %w", FaultHeader, errHeaderFault)
		}
		fs, err := faults.ParseAll(vs)
		if err != nil {
			return nil, fmt.Errorf("llmproxy: %s: %w", FaultHeader, errors.Join(err, errHeaderFault))
		}
		return &faults.Plan{Seed: s.cfg.Faults.Seed, Faults: fs}, nil
	}
	if se != nil && se.faults != nil {
		return se.faults, nil
	}
	if s.cfg.Faults.Empty() || mode == ModeRecord {
		return nil, nil
	}
	return &s.cfg.Faults, nil
}

// pickFault numbers a request in its conversation conv of scope (the
// cassette or scenario) and picks its fault from plan.
func (s *Server) pickFault(plan *faults.Plan, se *session, scope string, conv faults.Conversation) faultPick {
	count := &s.faultCount
	if se != nil && se.faults != nil && plan == se.faults {
		count = &se.faultCount
	}
	n := count.Next(scope, conv)
	return faultPick{f: plan.Pick(conv, n), n: n}
}

// faultConversation names the conversation of a request for its fault's
// number: the ConversationHeader, else for a chat API what opens its
// conversation (wire.OpeningSpans: the same for every request of a
// conversation, in every process), else none (the requests of a cassette
// are then numbered as one sequence). Every request pays for it once a
// fault is configured, so it reads the opening in place and digests it
// without allocating.
func faultConversation(r *http.Request, kind wire.Kind, body []byte) faults.Conversation {
	if vs := r.Header[ConversationHeader]; len(vs) > 0 && vs[0] != "" {
		return faults.Named(vs[0])
	}
	sys, first, ok := wire.OpeningSpans(kind, body)
	if !ok {
		return faults.Named("")
	}
	return faults.Opening(sys, first)
}

// faultAnswer is the answer a fault is injected into: a recording's or a
// scenario step's, as the provider sends it.
type faultAnswer struct {
	kind    wire.Kind
	status  int
	headers func(http.Header) // sets the answer's own headers (Content-Length of a body included)
	framing wire.Framing      // FramingNone: body, else events
	body    []byte
	events  int
	event   func(k int) []byte
	// options are the write options of the request, for a stream error
	// event (Gemini's JSON-array stream has none).
	options func() wire.WriteOptions
}

// faultOutcome is what injecting a fault did.
type faultOutcome struct {
	// skipped says why the fault was not injected (the answer was served
	// whole instead); "" when it was.
	skipped string
	// delivered: the whole answer reached the client (slow, a stall that
	// ended, or a skipped fault served whole).
	delivered bool
	// abort: the connection must close now, without ending the response
	// (panic http.ErrAbortHandler once the request is logged).
	abort bool
}

// consumes reports whether a faulted answer uses up its recording or step.
func (o faultOutcome) consumes(f *faults.Fault) bool { return o.delivered || f.Consume }

// inject writes a with fault f; last is called once, just before the
// write that completes what the client gets.
func inject(ctx context.Context, w http.ResponseWriter, f *faults.Fault, a *faultAnswer, last func()) faultOutcome {
	if why := faultFits(f, a); why != "" {
		return faultOutcome{skipped: why, delivered: serveAnswer(ctx, w, a, nil, last)}
	}
	switch f.Kind {
	case faults.Reset:
		last()
		resetConn(w)
		return faultOutcome{abort: true}
	case faults.Timeout:
		sleep(ctx, f.After)
		last()
		return faultOutcome{abort: true}
	case faults.Status:
		if f.Event > 0 {
			skipped, delivered := streamError(ctx, w, f, a, last)
			return faultOutcome{skipped: skipped, delivered: delivered}
		}
		writeFaultStatus(w, a.kind, f, last)
		return faultOutcome{}
	case faults.Cut:
		serveAnswer(ctx, w, a, &fault{cut: true, cutAfter: f.Event}, last)
		return faultOutcome{abort: true}
	case faults.Stall:
		return faultOutcome{delivered: serveAnswer(ctx, w, a, &fault{stallAfter: f.Event, stall: f.For}, last)}
	case faults.Malformed:
		serveAnswer(ctx, w, a, &fault{malformed: max(f.Event, 1)}, last)
		return faultOutcome{}
	case faults.Slow:
		return faultOutcome{delivered: serveAnswer(ctx, w, a, &fault{ttfb: f.TTFB, perEvent: f.PerEvent}, last)}
	}
	return faultOutcome{skipped: "unknown fault kind " + string(f.Kind), delivered: serveAnswer(ctx, w, a, nil, last)}
}

// faultFits says why f cannot be injected into a ("" when it can): an
// event it names that the answer does not have.
func faultFits(f *faults.Fault, a *faultAnswer) string {
	if f.Event == 0 {
		return ""
	}
	streamed := a.framing != wire.FramingNone
	if !streamed {
		return fmt.Sprintf("%s names event %d, but the answer is not a stream", f, f.Event)
	}
	// A cut or error after the last event would cut or end nothing.
	if (f.Kind == faults.Cut || f.Kind == faults.Status) && f.Event >= a.events || f.Event > a.events {
		return fmt.Sprintf("%s names event %d, but the stream has %d events", f, f.Event, a.events)
	}
	return ""
}

// fault is how serveAnswer changes the answer it writes.
type fault struct {
	ttfb, perEvent, stall time.Duration
	cut                   bool
	cutAfter              int // with cut, close after event cutAfter (0: after the headers)
	stallAfter            int // stall after event stallAfter (0: before the body)
	malformed             int // cut event malformed's JSON short (1: the body of a non-stream)
}

// serveAnswer writes a, changed by f (nil: as it is); it reports whether
// all of it reached the client. With cutAfter set it stops there.
func serveAnswer(ctx context.Context, w http.ResponseWriter, a *faultAnswer, f *fault, last func()) bool {
	if f == nil {
		f = &fault{}
	}
	if !sleep(ctx, f.ttfb) {
		return false
	}
	a.headers(w.Header())
	sandbox(w.Header())
	rc := http.NewResponseController(w)
	stall := func(k int) bool { return f.stall <= 0 || f.stallAfter != k || sleep(ctx, f.stall) }
	if a.framing == wire.FramingNone {
		body := a.body
		if f.malformed > 0 {
			body = wire.Malformed(wire.FramingNone, body)
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		if f.cut && f.cutAfter == 0 {
			last()
			w.WriteHeader(a.status)
			_ = rc.Flush()
			return false
		}
		w.WriteHeader(a.status)
		if rc.Flush() != nil || !stall(0) {
			return false
		}
		last()
		_, err := w.Write(body)
		return err == nil && rc.Flush() == nil
	}
	if a.events == 0 || f.cut && f.cutAfter == 0 {
		last()
	}
	w.WriteHeader(a.status)
	if rc.Flush() != nil || f.cut && f.cutAfter == 0 || !stall(0) {
		return false
	}
	for k := range a.events {
		if k > 0 && !sleep(ctx, f.perEvent) || contextDone(ctx) {
			return false
		}
		data := a.event(k)
		if k+1 == f.malformed {
			data = wire.Malformed(a.framing, data)
		}
		if k == a.events-1 || f.cut && k+1 == f.cutAfter {
			last()
		}
		if _, err := w.Write(data); err != nil || rc.Flush() != nil {
			return false
		}
		if f.cut && k+1 == f.cutAfter || !stall(k+1) {
			return false
		}
	}
	return true
}

// streamError sends the first f.Event events of a, then the provider's
// stream error event for f's status. Where the wire has no stream error it
// serves a whole instead, and says so (skipped), with whether all of it
// reached the client.
func streamError(ctx context.Context, w http.ResponseWriter, f *faults.Fault, a *faultAnswer, last func()) (skipped string, delivered bool) {
	ev, err := wire.StreamError(a.kind, a.options(), wire.ErrorAnswer{Status: f.Status, RetryAfter: f.RetryAfter, Message: "llmproxy: injected fault " + f.String()}, f.Event)
	if err != nil {
		return fmt.Sprintf("%s: %v", f, err), serveAnswer(ctx, w, a, nil, last)
	}
	quiet := func() {}
	if !serveAnswer(ctx, w, &faultAnswer{kind: a.kind, status: a.status, headers: a.headers, framing: a.framing, events: f.Event, event: a.event}, nil, quiet) {
		return "", false
	}
	last()
	_, _ = w.Write(ev.Raw)
	_ = http.NewResponseController(w).Flush()
	return "", false
}

// writeFaultStatus answers f's error status in the provider's own shape.
func writeFaultStatus(w http.ResponseWriter, kind wire.Kind, f *faults.Fault, last func()) {
	h := w.Header()
	written, err := wire.WriteError(kind, wire.ErrorAnswer{Status: f.Status, RetryAfter: f.RetryAfter,
		Message: "llmproxy: injected fault " + f.String()})
	if err != nil { // a kind with no error writer of its own
		ct, body := wire.ErrorBody(kind, f.Status, "", "llmproxy: injected fault "+f.String())
		written = wire.Written{Status: f.Status, Header: http.Header{"Content-Type": {ct}}, Body: body}
		if f.RetryAfter > 0 {
			written.Header.Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
		}
	}
	for k, vs := range written.Header {
		h[k] = append([]string(nil), vs...)
	}
	h.Set("Content-Length", strconv.Itoa(len(written.Body)))
	sandbox(h)
	last()
	w.WriteHeader(written.Status)
	_, _ = w.Write(written.Body)
}

// resetConn resets the client's TCP connection: linger 0, then close, so
// the kernel sends RST. A connection that cannot be hijacked (HTTP/2) is
// left to the abort that follows.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// chooseFault picks the fault of a proxied request: false when its
// FaultHeader was refused (answered 400 here). MCP requests take none:
// --fault and a session's faults pass them by, and a FaultHeader on one is
// refused, so that a test asking for a fault there learns it got none.
func (s *Server) chooseFault(w http.ResponseWriter, x *exchange, se *session) bool {
	plan, err := s.faultPlan(x.req, se, x.rules.mode)
	if err == nil && x.kind == wire.KindMCP && len(x.req.Header[FaultHeader]) > 0 {
		err = fmt.Errorf("llmproxy: %s: MCP traffic takes no faults; they are injected into LLM answers only (docs/faults.md): %w", FaultHeader, errHeaderFault)
	}
	if err != nil {
		s.log.WarnContext(x.req.Context(), "fault refused", x.logArgs("reason", err.Error())...)
		failWith(w, x.kind, http.StatusBadRequest, "invalid_request_error", err.Error())
		s.journal.add(logged{LogEntry: LogEntry{Time: x.start.UTC(), Cassette: x.tape.name, Method: x.req.Method, Upstream: x.route.name,
			Path: x.mreq.Path, Kind: string(x.kind), Status: http.StatusBadRequest, Miss: err.Error()}})
		return false
	}
	if plan == nil || x.kind == wire.KindMCP {
		return true
	}
	x.fault = s.pickFault(plan, se, x.tape.name, faultConversation(x.req, x.kind, x.mreq.Body))
	return true
}

// faultAnswer is a recording as a fault sees it. An error status in place
// of the answer sees only its kind.
func (s *Server) faultAnswer(x *exchange, served *cassette.Reply) *faultAnswer {
	if f := x.fault.f; f.Kind == faults.Status && f.Event == 0 {
		return &faultAnswer{kind: x.kind}
	}
	rep := new(cassette.Reply) // a copy, so that only a faulted request puts a reply on the heap
	*rep = *served
	framing := wire.FramingNone
	if rep.Streamed() {
		framing, _ = wire.ParseFraming(rep.Framing())
		if framing == wire.FramingNone {
			framing = wire.FramingSSE
		}
	}
	return &faultAnswer{kind: x.kind, status: rep.Status, headers: rep.SetHeaders, framing: framing, body: rep.Body(),
		events: rep.Events(), event: func(k int) []byte { data, _ := rep.Event(k); return data },
		options: func() wire.WriteOptions {
			path := x.route.path
			if x.req.URL.RawQuery != "" {
				path += "?" + x.req.URL.RawQuery
			}
			o, _ := wire.OptionsFor(x.kind, path, x.body)
			return o
		}}
}

// noteFault fills in the fault of a log entry and logs it.
func (s *Server) noteFault(ctx context.Context, e *LogEntry, p faultPick, out faultOutcome, args []any) {
	noteFault(ctx, s.log, e, p, out, args)
}

func (m *mocker) noteFault(ctx context.Context, e *LogEntry, p faultPick, out faultOutcome, args []any) {
	noteFault(ctx, m.log, e, p, out, args)
}

func noteFault(ctx context.Context, log *slog.Logger, e *LogEntry, p faultPick, out faultOutcome, args []any) {
	e.Fault, e.FaultRequest, e.FaultSkipped = p.f.String(), p.n, out.skipped
	if p.f.Kind == faults.Status && p.f.Event == 0 && out.skipped == "" {
		e.Status = p.f.Status
	}
	args = append(args, "fault", e.Fault, "request", p.n)
	if out.skipped != "" {
		log.WarnContext(ctx, "fault not injected", append(args, "reason", out.skipped)...)
		return
	}
	log.InfoContext(ctx, "fault injected", args...)
}

// faultChooser picks the fault of a mock request once its scenario and
// conversation are known.
type faultChooser func(scenario, conv string) faultPick

// mockFaults returns the fault chooser of a mock request (nil when it has
// no faults), or false when its FaultHeader was refused (answered here).
func (s *Server) mockFaults(w http.ResponseWriter, r *http.Request, start time.Time, rt route, kind wire.Kind, se *session) (faultChooser, bool) {
	if len(r.Header[FaultHeader]) == 0 && s.cfg.Faults.Empty() && (se == nil || se.faults == nil) {
		return nil, true
	}
	if r.Header.Get(ScenarioHeader) != "" {
		se = nil // a request naming its scenario is not the session's
	}
	plan, err := s.faultPlan(r, se, ModeMock)
	if err != nil {
		s.log.WarnContext(r.Context(), "fault refused", "api", string(kind), "method", r.Method, "path", cassette.ProxyPath(rt.name, rt.path), "reason", err.Error())
		failWith(w, kind, http.StatusBadRequest, "invalid_request_error", err.Error())
		s.journal.add(logged{LogEntry: LogEntry{Time: start.UTC(), Method: r.Method, Upstream: rt.name, Path: s.redactor.Path(rt.path),
			Kind: string(kind), Status: http.StatusBadRequest, Miss: err.Error()}})
		return nil, false
	}
	if plan == nil {
		return nil, true
	}
	return func(scenario, conv string) faultPick { return s.pickFault(plan, se, scenario, faults.Named(conv)) }, true
}

// deliverFault writes a scenario step's answer with a fault; the step is
// committed only when the fault delivered the whole answer or consumes.
func (m *mocker) deliverFault(w http.ResponseWriter, x *mockExchange, p *scenario.Pending, opts wire.WriteOptions, pick faultPick) {
	written, err := m.written(x.kind, p, opts)
	if err != nil {
		m.refuse(w, x, http.StatusInternalServerError, fmt.Sprintf("llmproxy: scenario %s, step %s: %v", p.Scenario, p.Step, err))
		return
	}
	// A stream the Content-Type does not frame (Gemini's JSON array) is a
	// body to a fault, as its recording is.
	framing := wire.FramingNone
	if written.Streamed() {
		framing = wire.DetectFraming(written.Header.Get("Content-Type"))
	}
	body := written.Body
	if framing == wire.FramingNone {
		body = written.Bytes()
	}
	a := &faultAnswer{kind: x.kind, status: written.Status, framing: framing, body: body, events: len(written.Events),
		event:   func(k int) []byte { return written.Events[k].Raw },
		options: func() wire.WriteOptions { return opts },
		headers: func(h http.Header) {
			for k, vs := range written.Header {
				h[k] = append([]string(nil), vs...)
			}
			if framing == wire.FramingNone {
				h.Set("Content-Length", strconv.Itoa(len(body)))
			}
		}}
	var settled func()
	defer func() {
		if settled != nil {
			settled()
		}
	}()
	out := inject(x.req.Context(), w, pick.f, a, func() { settled = m.journal.begin(nil, true).close })
	if out.consumes(pick.f) {
		p.Commit()
		m.keep(p)
		x.stats.serve()
	}
	e := x.entry(written.Status, p.Step, "")
	e.Incomplete = !out.delivered
	m.noteFault(x.req.Context(), &e.LogEntry, pick, out, []any{"scenario", p.Scenario, "conversation", p.Conversation, "step", p.Step})
	m.journal.add(e)
	if out.abort {
		panic(http.ErrAbortHandler) // the deferred settle closes the bracket
	}
}
