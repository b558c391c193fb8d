package proxy

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/mcp"
	"github.com/llmproxy/llmproxy/wire"
)

// replay answers from the cassette; in auto mode a miss is recorded instead.
// The common case, a request whose match key has a recording, costs one
// read transaction of the cassette (see serveRecording).
func (s *Server) replay(w http.ResponseWriter, x *exchange, auto bool) {
	var ids []uint64 // nil: serveRecording looks the key up
	for {
		t, err := s.serveRecording(w, x, ids)
		if err != nil {
			failWith(w, x.kind, http.StatusInternalServerError, "cassette_error", "llmproxy: "+err.Error())
			return
		}
		switch {
		case t.served:
			return
		case t.wait != nil:
			select {
			case <-t.wait:
				continue
			case <-x.req.Context().Done():
				return // the client left while an earlier serve of its request was in flight
			}
		case len(t.ids) == 0 && ids == nil:
			if ids, err = s.otherRecordings(x, auto); err != nil {
				failWith(w, x.kind, http.StatusInternalServerError, "cassette_error", "llmproxy: "+err.Error())
				return
			}
			if len(ids) > 0 {
				continue
			}
		}
		var served []uint64 // the request's recordings, when every one was served
		if t.exhausted {
			served = t.ids
		}
		if auto {
			s.record(w, x)
			return
		}
		s.miss(w, x, served)
		return
	}
}

// A serving is the outcome of one serveRecording.
type serving struct {
	ids       []uint64        // the request's recordings
	served    bool            // one was acquired and served, whole or not
	exhausted bool            // every one was consumed, and the policy rejects
	wait      <-chan struct{} // the first unconsumed one is in flight: wait, then try again
}

// serveRecording serves the request from its recordings — ids, or when ids
// is nil the recordings of its match key — in one read transaction of the
// cassette: the lookup, the choice (plays.try) and the read of the chosen
// response see the same cassette. A recording is consumed only when the
// whole response reached the client.
//
// A read-only cassette cannot change, so what its tape's cache kept (see
// replyCache) is served without a transaction: the recordings of a key
// kept are chosen from at once, and a reply kept is served with no read.
// What is read from the file is kept, within the cache's budget.
//
// The response is written from the bytes the transaction read (in a
// read-only cassette, its record read from the file into the
// transaction's buffer), inside the transaction, with no copy, when that
// is safe and short: the cassette is read-only
// (so no process writes it, and no writer waits on the transaction, however
// slow the client) and the response is not paced (--pace recorded or
// --latency would hold the transaction while sleeping). Otherwise (auto
// mode, whose writer must be able to grow the file, or a paced response)
// it is copied out and written after the transaction ends.
func (s *Server) serveRecording(w http.ResponseWriter, x *exchange, ids []uint64) (serving, error) {
	t := serving{ids: ids}
	cache := x.tape.cache
	if t.ids == nil {
		t.ids = cache.lookup(x.key)
	}
	var p pick
	picked := cache != nil && len(t.ids) > 0
	if picked {
		if p = t.try(x); p.wait != nil || p.exhausted {
			return t, nil
		}
		if k := cache.reply(p.id); k != nil {
			t.served = true
			s.play(w, x, p, recorded{rep: &k.rep, cached: k})
			return t, nil
		}
	}
	fromPage := x.tape.c.ReadOnly() && s.cfg.Pace != PaceRecorded && s.cfg.Latency <= 0 && x.fault.inPlace()
	var held recorded // what is served after the transaction
	err := x.tape.c.Read(func(r *cassette.Reader) error {
		if !picked {
			if t.ids == nil {
				var err error
				if t.ids, err = x.tape.index.lookupIn(r, x.key); err != nil {
					return err
				}
				cache.keepIDs(x.key, t.ids)
			}
			if len(t.ids) == 0 {
				return nil
			}
			if p = t.try(x); p.wait != nil || p.exhausted {
				return nil
			}
		}
		rep, err := r.Reply(p.id)
		if err != nil {
			x.tape.plays.release(p.id, false)
			return err
		}
		t.served = true
		switch k := cache.keep(p.id, &rep); {
		case k != nil:
			held = recorded{rep: &k.rep, cached: k}
		case fromPage:
			s.play(w, x, p, recorded{rep: &rep})
		default:
			c := rep.Clone()
			held = recorded{rep: &c}
		}
		return nil
	})
	if err == nil && held.rep != nil {
		s.play(w, x, p, held)
	}
	return t, err
}

// try picks the recording to serve of t.ids (see plays.try), and notes in
// t whether to wait or whether they are exhausted.
func (t *serving) try(x *exchange) pick {
	p := x.tape.plays.try(t.ids, x.rules.exhausted)
	t.wait, t.exhausted = p.wait, p.exhausted
	return p
}

// recorded is a recording's response as play serves it.
type recorded struct {
	rep *cassette.Reply
	// cached is the reply as a tape's cache keeps it, with its headers
	// ready to set; nil when rep is not kept.
	cached *cachedReply
}

// setHeaders sets the recorded headers in h (see cassette.Reply.SetHeaders).
func (r recorded) setHeaders(h http.Header) {
	if r.cached != nil {
		r.cached.setHeaders(h)
		return
	}
	r.rep.SetHeaders(h)
}

// play serves an acquired recording and releases it, consumed if the whole
// response reached the client; a repeat serve changes no state.
func (s *Server) play(w http.ResponseWriter, x *exchange, p pick, r recorded) {
	rep := r.rep
	x.played = true
	var (
		settled   bracketRef
		delivered bool
		released  bool
	)
	// Deferred, so that a serve that panics (an http.ResponseWriter does
	// for a status it cannot write) still lets its recording and its
	// bracket go: otherwise the next request for it, and every API reader,
	// would wait forever.
	defer func() {
		if !released && !p.repeat {
			x.tape.plays.release(p.id, false)
		}
		if settled.j != nil {
			settled.close()
		}
	}()
	begin := func() { settled = s.journal.begin(x.tape, true) }
	var out faultOutcome
	consumed := false
	if x.fault.f != nil {
		out = inject(x.req.Context(), w, x.fault.f, s.faultAnswer(x, rep), begin)
		delivered, consumed = out.delivered, out.consumes(x.fault.f)
	} else {
		delivered = s.serve(w, x, r, begin)
		consumed = delivered
	}
	if !p.repeat {
		x.tape.plays.release(p.id, consumed)
	}
	released = true
	if s.log.Enabled(x.req.Context(), slog.LevelDebug) {
		s.log.DebugContext(x.req.Context(), "replayed", x.logArgs("interaction", p.id, "status", rep.Status, "delivered", delivered)...)
	}
	e := x.entry(p.id, "", rep.Status)
	e.Repeat, e.Incomplete = p.repeat, !delivered
	if x.fault.f != nil {
		s.noteFault(x.req.Context(), &e.LogEntry, x.fault, out, x.logArgs("interaction", p.id))
	}
	if consumed {
		x.tape.stats.serve()
	}
	// The entry and the bracket's close under one lock, after everything
	// a reader that settles may read.
	s.journal.addClosing(e, settled)
	settled = bracketRef{}
	if out.abort { // the bracket is closed: nothing waits for this request
		panic(http.ErrAbortHandler) // the connection closes with no more of the answer
	}
}

// otherRecordings are the recordings of a request that has none under its
// match key, looked up again only as what it may be: in replay, one for an
// upstream this server was not given (see reroute); then one whose tool
// results equal their fixtures as JSON values but are written otherwise
// (see fixtureMatch).
func (s *Server) otherRecordings(x *exchange, auto bool) ([]uint64, error) {
	if !auto && s.reroute(x) {
		if ids, err := x.tape.index.lookup(x.key); err != nil || len(ids) > 0 {
			return ids, err
		}
	}
	return s.fixtureMatch(x), nil
}

// serve writes a recorded response; it reports whether all of it reached
// the client. last is called once, just before the write that completes the
// response.
func (s *Server) serve(w http.ResponseWriter, x *exchange, r recorded, last func()) bool {
	ctx := x.req.Context()
	rep := r.rep
	r.setHeaders(w.Header()) // and Content-Length, for a body
	if r.cached == nil {
		sandbox(w.Header()) // over the recording's own; a kept reply's headers have it
	}
	isMCP := x.kind == wire.KindMCP
	if isMCP {
		mcpHeaders(w.Header(), x)
	}
	if !sleep(ctx, s.cfg.Latency) {
		return false
	}
	if s.cfg.Pace == PaceRecorded && !sleepUntil(ctx, x.start.Add(s.cfg.Latency+millis(rep.TTFBMillis))) {
		return false
	}
	n := rep.Events()
	if !rep.Streamed() || n == 0 {
		last()
	}
	body := rep.Body()
	if isMCP && !rep.Streamed() && len(body) > 0 {
		body = mcp.Rewrite(body, x.mcp.ID, x.mcp.ProgressToken)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(rep.Status)
	rc := http.NewResponseController(w)
	if !rep.Streamed() {
		if _, err := w.Write(body); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	for k := range n {
		if contextDone(ctx) {
			return false
		}
		data, at := rep.Event(k)
		if isMCP {
			data = mcp.RewriteEvent(data, x.mcp.ID, x.mcp.ProgressToken)
		}
		if s.cfg.Pace == PaceRecorded && !sleepUntil(ctx, x.start.Add(s.cfg.Latency+millis(at))) {
			return false
		}
		if k == n-1 {
			last()
		}
		if _, err := w.Write(data); err != nil {
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
