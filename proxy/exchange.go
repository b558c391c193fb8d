package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/mcp"
	"github.com/llmproxy/llmproxy/wire"
)

// exchange is one proxied request being handled.
type exchange struct {
	start time.Time
	route route
	tape  *tape
	rules *tapeRules // the tape's, or the server's
	req   *http.Request
	body  []byte
	kind  wire.Kind
	mreq  *match.Request // points at request
	// request is the request as matching sees it, kept here so that an
	// exchange is one allocation.
	request match.Request
	key     string
	// closest and diffs are what a miss was compared with, for the log.
	closest uint64
	diffs   []match.Difference
	// played is set once a recording answered the request; nothing then
	// keeps its body.
	played bool
	// mcp is the JSON-RPC message of an MCP request (kind wire.KindMCP).
	mcp mcp.Message
	// fault is the fault picked for the request, if any (see inject.go).
	fault faultPick
}

// logArgs are the attributes of the exchange's log lines, then more.
func (x *exchange) logArgs(more ...any) []any {
	args := make([]any, 0, 8+len(more))
	args = append(args, "cassette", x.tape.name, "api", string(x.kind), "method", x.req.Method, "path", cassette.ProxyPath(x.route.name, x.mreq.Path))
	return append(args, more...)
}

// handleProxy reads a request meant for an upstream, computes its match
// key, and records, replays or does either as the mode says.
func (s *Server) handleProxy(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sandbox(w.Header()) // every answer, errors and misses too
	if escapesReserved(r.URL.EscapedPath()) {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "llmproxy: the path "+r.URL.EscapedPath()+
			" is the reserved prefix /_llmproxy/ escaped; /_llmproxy/ is the proxy's own API, never forwarded, and is answered only unescaped")
		return
	}
	rt := s.route(r)
	if !rt.unprefixed && (isReserved(rt.path) || escapesReserved(rt.path)) {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "llmproxy: the path "+r.URL.EscapedPath()+
			" would reach upstream "+rt.name+" as "+rt.path+", under the reserved prefix /_llmproxy/; it is never forwarded")
		return
	}
	kind := wire.Detect(r.Method, rt.path)
	if rt.mcp {
		kind = wire.KindMCP
	}
	var t *tape
	var se *session
	releaseTape := func() {}
	switch {
	case s.mock != nil && r.Header.Get(ScenarioHeader) == "":
		if se = s.sessions.acquire(); se != nil {
			releaseTape = se.release
		}
	case s.mock == nil:
		var err error
		if r.Header.Get(CassetteHeader) == "" {
			t, se, releaseTape, err = s.sessionTape(r)
		} else {
			t, releaseTape, err = s.tapes.forRequest(r)
		}
		if err != nil {
			s.failTape(w, r, kind, rt, se, err)
			return
		}
	}
	defer releaseTape()
	sc := s.scratches.get()
	body, err := s.readBody(w, r, sc)
	defer func() { s.dropScratch(sc, body) }()
	if err != nil {
		s.failBody(w, r, kind, rt, err)
		return
	}
	if s.mock != nil && rt.mcp {
		s.mockMCP(w, r, start, rt, body)
		return
	}
	if s.mock != nil {
		choose, ok := s.mockFaults(w, r, start, rt, kind, se)
		if ok {
			s.mock.serve(w, r, start, rt, kind, body, se, choose)
		}
		sc.bodyKept = true // mock reads only the body, which it may keep
		return
	}
	x := &sc.x
	*x = exchange{start: start, route: rt, tape: t, rules: t.rules, req: r, body: body, kind: kind}
	if x.rules == nil {
		x.rules = &s.rules
	}
	// Matching, the log and the journal see the request as it is stored:
	// with its secrets redacted. So a recording's match key is the key of
	// the live request, whatever key-shaped strings either carried, and no
	// secret reaches a log line or a miss message.
	// The matcher reads a few headers; only those are copied (redacted).
	sc.header = s.redactor.HeadersOnlyInto(sc.header, r.Header, x.rules.matcher.HeadersRead())
	x.request = match.Request{
		Method: r.Method, Upstream: rt.name, Path: s.redactor.Path(rt.path), Query: s.redactor.Query(r.URL.RawQuery),
		Header: sc.header, Body: s.redactor.Body(body), Kind: string(kind),
	}
	x.mreq = &x.request
	if kind == wire.KindMCP && !s.admitMCP(w, x) {
		return
	}
	x.key, err = x.rules.matcher.Key(x.mreq)
	if err != nil {
		failWith(w, kind, http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("llmproxy: %s: %v", t.name, jsonProblem(err, body)))
		s.journal.add(logged{LogEntry: LogEntry{Time: start, Cassette: t.name, Method: r.Method, Path: x.mreq.Path, Kind: string(kind), Miss: err.Error()}})
		return
	}
	if (len(r.Header[FaultHeader]) > 0 || !s.cfg.Faults.Empty() || se != nil && se.faults != nil) && !s.chooseFault(w, x, se) {
		return
	}
	switch x.rules.mode {
	case ModeRecord:
		s.record(w, x)
	case ModeReplay:
		s.replay(w, x, false)
	case ModeAuto:
		s.replay(w, x, true)
	}
}

// dropScratch gives a request body's bytes back to the budget of bodies in
// flight once its request is answered, and the request's scratch to the
// next request when a recording answered it, or, without its body, when
// mock did (see scratch).
func (s *Server) dropScratch(sc *scratch, body []byte) {
	sc.body.release()
	switch {
	case sc.x.played:
		s.scratches.put(sc, body)
	case sc.bodyKept:
		s.scratches.put(sc, nil)
	}
}

// failBody answers a request whose body could not be read: over the
// in-flight budget (503), over --max-body (413), too slow (408), or broken
// (400).
func (s *Server) failBody(w http.ResponseWriter, r *http.Request, kind wire.Kind, rt route, err error) {
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.Is(err, errBodyBudget):
		s.log.WarnContext(r.Context(), "request bodies in flight over --max-body-total; answered 503", "path", cassette.ProxyPath(rt.name, rt.path), "max_body_total", s.cfg.MaxBodyTotal)
		w.Header().Set("Retry-After", "1")
		failWith(w, kind, http.StatusServiceUnavailable, "server_error",
			fmt.Sprintf("llmproxy: the request bodies in flight are over the limit of %d bytes (--max-body-total); retry", s.cfg.MaxBodyTotal))
	case errors.As(err, &mbe):
		failWith(w, kind, http.StatusRequestEntityTooLarge, "invalid_request_error",
			fmt.Sprintf("llmproxy: request body is over the limit of %d bytes (--max-body)", s.cfg.MaxBody))
	case errors.As(err, &ne) && ne.Timeout():
		s.log.WarnContext(r.Context(), "request body too slow; connection closed", "path", cassette.ProxyPath(rt.name, rt.path), "read_timeout", s.cfg.ReadTimeout)
		failWith(w, kind, http.StatusRequestTimeout, "invalid_request_error",
			fmt.Sprintf("llmproxy: the request body did not arrive within %s (--read-timeout)", s.cfg.ReadTimeout))
	default:
		failWith(w, kind, http.StatusBadRequest, "invalid_request_error", "llmproxy: reading request body: "+err.Error())
	}
}

// readBody reads the request body through sc.body within Config.MaxBody
// bytes, Config.ReadTimeout and the budget of bodies in flight, into the
// reader's spare buffer if it has room, with no read deadline left
// afterwards so that the response, however long, is not cut. Call
// sc.body.release once the body is dropped, whatever the error: it gives
// the body's bytes back to the budget.
//
// An HTTP/1 body is timed by the server's watch; any other by a read
// deadline of its own.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, sc *scratch) (body []byte, err error) {
	br := &sc.body
	br.r, br.b = r.Body, &s.bodies
	if r.Body == nil || r.Body == http.NoBody {
		return []byte{}, nil // nothing to wait for, so no deadline
	}
	if r.ProtoMajor == 1 {
		s.watch.add(&sc.watch, w, nil)
		body, err = readAll(http.MaxBytesReader(w, br, s.cfg.MaxBody), r.ContentLength, br.spare)
		if s.watch.remove(&sc.watch) && err == nil {
			// Cut as it ended: it took the whole timeout all the same,
			// and the connection's deadline is past.
			err = os.ErrDeadlineExceeded
		}
		return body, err
	}
	rc := http.NewResponseController(w)
	// A writer without deadlines (a test's recorder) reads unbounded.
	_ = rc.SetReadDeadline(time.Now().Add(s.cfg.ReadTimeout))
	body, err = readAll(http.MaxBytesReader(w, br, s.cfg.MaxBody), r.ContentLength, br.spare)
	if err == nil {
		_ = rc.SetReadDeadline(time.Time{})
	}
	return body, err
}

// maxBodyHint bounds the buffer readAll sets aside for a declared
// Content-Length before the bytes arrive, so that a client announcing a
// large body and sending none holds little memory.
const maxBodyHint = 16 << 10

// readAll reads r to its end, like io.ReadAll, into one buffer of the
// declared length when that is known and small: a body read in one
// allocation rather than a doubling series of them, or in none when spare
// has room for it.
func readAll(r io.Reader, declared int64, spare []byte) ([]byte, error) {
	if declared <= 0 || declared > maxBodyHint {
		return io.ReadAll(r)
	}
	b := spare[:0]
	if int64(cap(b)) <= declared {
		b = make([]byte, 0, declared+1) // +1: room for the read that meets the end
	}
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // longer than declared: grow as io.ReadAll does
		}
	}
}

// jsonProblem says where a body stops being JSON.
func jsonProblem(err error, body []byte) string {
	if !errors.Is(err, match.ErrMalformedJSON) {
		return err.Error()
	}
	var v any
	jerr := json.Unmarshal(body, &v)
	var se *json.SyntaxError
	if errors.As(jerr, &se) {
		return fmt.Sprintf("request body is not valid JSON: %v (at byte %d)", se, se.Offset)
	}
	return "request body is not valid JSON: it ends early"
}

// failWith writes an error in the API kind's own shape.
func failWith(w http.ResponseWriter, kind wire.Kind, status int, errType, msg string) {
	ct, body := wire.ErrorBody(kind, status, errType, msg)
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// contextDone reports whether ctx is done. It asks Err rather than
// Done: a request's context makes its Done channel on first call, an
// allocation and a lock on every request that asks.
func contextDone(ctx context.Context) bool { return ctx.Err() != nil }
