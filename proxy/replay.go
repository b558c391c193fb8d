package proxy

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
)

// replay answers from the cassette; in auto mode a miss is recorded instead.
func (s *Server) replay(w http.ResponseWriter, x *exchange, auto bool) {
	ids, err := s.recordings(x, auto)
	if err != nil {
		s.fail(w, x.kind, http.StatusInternalServerError, "cassette_error", "llmproxy: "+err.Error())
		return
	}
	var served []uint64 // the request's recordings, when every one was served
	if len(ids) > 0 {
		id, repeat, exhausted, err := x.tape.plays.acquire(x.req.Context(), ids, s.cfg.OnExhausted)
		if err != nil {
			return // the client left while an earlier serve of its request was in flight
		}
		if !exhausted {
			s.play(w, x, id, repeat)
			return
		}
		served = ids
	}
	if auto {
		s.record(w, x)
		return
	}
	s.miss(w, x, served)
}

// play serves an acquired recording and releases it, consumed if the whole
// response reached the client; a repeat serve changes no state.
func (s *Server) play(w http.ResponseWriter, x *exchange, id uint64, repeat bool) {
	i, err := x.tape.c.GetResponse(id)
	if err != nil {
		x.tape.plays.release(id, false)
		s.fail(w, x.kind, http.StatusInternalServerError, "cassette_error", "llmproxy: "+err.Error())
		return
	}
	var settled bracketRef
	delivered := s.serve(w, x, i, func() { settled = s.journal.begin(x.tape, true) })
	if settled.j != nil {
		defer settled.close()
	}
	if !repeat {
		x.tape.plays.release(id, delivered)
	}
	if s.log.Enabled(x.req.Context(), slog.LevelDebug) {
		s.log.DebugContext(x.req.Context(), "replayed", x.logArgs("interaction", id, "status", i.Response.Status, "delivered", delivered)...)
	}
	e := x.entry(id, "", i.Response.Status)
	e.Repeat, e.Incomplete = repeat, !delivered
	s.journal.add(e)
}

// recordings are the recordings of the request's match key, found with one
// index lookup. A request that has none is looked up again only as what it
// may be: in replay, one for an upstream this server was not given (see
// reroute); then one whose tool results equal their fixtures as JSON values
// but are written otherwise (see fixtureMatch).
func (s *Server) recordings(x *exchange, auto bool) ([]uint64, error) {
	ids, err := x.tape.index.lookup(x.key)
	if err != nil || len(ids) > 0 {
		return ids, err
	}
	if !auto && s.reroute(x) {
		if ids, err = x.tape.index.lookup(x.key); err != nil || len(ids) > 0 {
			return ids, err
		}
	}
	return s.fixtureMatch(x), nil
}

// serve writes a recorded response; it reports whether all of it reached
// the client. last is called once, just before the write that completes the
// response.
func (s *Server) serve(w http.ResponseWriter, x *exchange, i *cassette.Interaction, last func()) bool {
	ctx := x.req.Context()
	h := w.Header()
	for k, vs := range i.Response.Headers {
		h[k] = append([]string(nil), vs...)
	}
	if !i.Response.Streamed() {
		h.Set("Content-Length", strconv.Itoa(len(i.Response.Body)))
	}
	if !sleep(ctx, s.cfg.Latency) {
		return false
	}
	if s.cfg.Pace == PaceRecorded && !sleepUntil(ctx, x.start.Add(s.cfg.Latency+millis(i.Response.TTFBMillis))) {
		return false
	}
	if !i.Response.Streamed() || len(i.Response.Events) == 0 {
		last()
	}
	w.WriteHeader(i.Response.Status)
	rc := http.NewResponseController(w)
	if !i.Response.Streamed() {
		if _, err := w.Write(i.Response.Body); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	for n, e := range i.Response.Events {
		if contextDone(ctx) {
			return false
		}
		if s.cfg.Pace == PaceRecorded && !sleepUntil(ctx, x.start.Add(s.cfg.Latency+millis(e.AtMillis))) {
			return false
		}
		if n == len(i.Response.Events)-1 {
			last()
		}
		if _, err := w.Write(e.Data); err != nil {
			return false
		}
		if err := rc.Flush(); err != nil {
			return false
		}
	}
	return true
}

func millis(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return !contextDone(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func sleepUntil(ctx context.Context, at time.Time) bool { return sleep(ctx, time.Until(at)) }
