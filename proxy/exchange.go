package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/wire"
)

// exchange is one proxied request being handled.
type exchange struct {
	start time.Time
	route route
	tape  *tape
	req   *http.Request
	body  []byte
	kind  wire.Kind
	mreq  *match.Request
	key   string
}

// logArgs are the attributes of the exchange's log lines, then more.
func (x *exchange) logArgs(more ...any) []any {
	args := make([]any, 0, 8+len(more))
	args = append(args, "cassette", x.tape.name, "api", string(x.kind), "method", x.req.Method, "path", x.route.path)
	return append(args, more...)
}

// handleProxy reads a request meant for an upstream, computes its match
// key, and records, replays or does either as the mode says.
func (s *Server) handleProxy(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if escapesReserved(r.URL.EscapedPath()) {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "llmproxy: the path "+r.URL.EscapedPath()+
			" is the reserved prefix /_llmproxy/ escaped; /_llmproxy/ is the proxy's own API, never forwarded, and is answered only unescaped")
		return
	}
	rt := s.route(r)
	kind := wire.Detect(r.Method, rt.path)
	t, release, err := s.tapes.forRequest(r)
	if err != nil {
		s.failTape(w, r, kind, err)
		return
	}
	defer release()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.fail(w, kind, http.StatusRequestEntityTooLarge, "invalid_request_error",
				fmt.Sprintf("llmproxy: request body is over the limit of %d bytes (--max-body)", s.cfg.MaxBody))
			return
		}
		s.fail(w, kind, http.StatusBadRequest, "invalid_request_error", "llmproxy: reading request body: "+err.Error())
		return
	}
	x := &exchange{start: start, route: rt, tape: t, req: r, body: body, kind: kind}
	x.mreq = &match.Request{
		Method: r.Method, Upstream: rt.name, Path: rt.path, Query: r.URL.RawQuery,
		Header: r.Header, Body: body, Kind: string(kind),
	}
	x.key, err = s.matcher.Key(x.mreq)
	if err != nil {
		s.fail(w, kind, http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("llmproxy: %s: %v", t.name, jsonProblem(err, body)))
		s.journal.add(LogEntry{Time: start, Cassette: t.name, Method: r.Method, Path: rt.path, Kind: string(kind), Miss: err.Error()})
		return
	}
	switch s.cfg.Mode {
	case ModeRecord:
		s.record(w, x)
	case ModeReplay:
		s.replay(w, x, false)
	case ModeAuto:
		s.replay(w, x, true)
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

// fail writes an error in the API kind's own shape.
func (s *Server) fail(w http.ResponseWriter, kind wire.Kind, status int, errType, msg string) {
	ct, body := wire.ErrorBody(kind, status, errType, msg)
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func contextDone(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}
