package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
)

// record forwards the request, tees the response to the client as it
// arrives, and writes the interaction once the response completed, in the
// order the requests arrived (see writeBehind.arrive).
func (s *Server) record(w http.ResponseWriter, x *exchange) {
	if x.route.base == nil { // an MCP server this proxy was not given
		s.noMCPServer(w, x)
		return
	}
	// The journal's readers wait for the interaction to be written (or
	// dropped), which may be after this handler returns, once the client
	// may hold the whole response.
	b := s.journal.begin(x.tape, false)
	sl := x.tape.writer.arriveFor(x.key, b.close)
	b.setBehind(sl.behind)
	defer sl.abandon()
	s.forward(&endWriter{ResponseWriter: w, at: b.end}, x, sl)
	b.end() // a chunked response ends for the client when the handler returns
}

// endWriter calls at before the write that completes a response whose
// Content-Length is known, so that the journal's readers wait for its
// recording from the moment the client can hold it whole.
type endWriter struct {
	http.ResponseWriter
	at      func()
	left    int64
	started bool
}

func (e *endWriter) Write(p []byte) (int, error) {
	if !e.started {
		e.started = true
		e.left = -1
		if n, err := strconv.ParseInt(e.Header().Get("Content-Length"), 10, 64); err == nil {
			e.left = n
		}
	}
	if e.left >= 0 {
		if int64(len(p)) >= e.left {
			e.at()
		}
		e.left -= int64(len(p))
	}
	return e.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (e *endWriter) Unwrap() http.ResponseWriter { return e.ResponseWriter }

// forward does the upstream exchange in four steps, under a watch that ends
// it when the upstream falls silent or the client has long gone: send the
// request, open the response body, tee it to the client, and finish the
// interaction, which sl then writes. A step that fails says why (see
// failure) and nothing is recorded.
func (s *Server) forward(w http.ResponseWriter, x *exchange, sl *slot) {
	watch := s.watchUpstream(x.req.Context())
	defer watch.stop()
	resp, sent, f := s.send(x, watch)
	if f != nil {
		s.failed(w, x, f)
		return
	}
	defer resp.Body.Close()
	body, f := s.openBody(x, resp, watch)
	if f != nil {
		s.failed(w, x, f)
		return
	}
	defer body.release()
	c := startResponse(w, resp, body.decoded)
	// With Sync, the end of the response waits for its write: a chunked
	// body ends when the handler returns, after finish; a body of known
	// length holds back its last byte until then.
	c.hold = s.cfg.Sync && w.Header().Get("Content-Length") != ""
	rec := newTeeStream(resp.Header, sent)
	finished := false
	defer func() {
		if !finished {
			s.recording.give(rec.held)
		}
	}()
	if f := s.tee(resp.StatusCode, body, c, rec, watch); f != nil {
		s.failed(w, x, f)
		return
	}
	finished = true // finish gives rec.held back once the interaction is written
	s.finish(x, sl, resp, rec, !c.gone)
	c.release()
}

// failure is why an upstream exchange left nothing to record, and what to
// do about it. The zero failure does nothing: the client is gone and there
// is nothing to tell anyone.
type failure struct {
	status int    // the status of the answer and of the journal entry
	reply  string // the error message answered in the API kind's shape; "" for no answer
	note   string // the journal entry's reason; "" for no entry
	level  slog.Level
	msg    string // the log line; "" for none
	attrs  []any  // the log line's attributes beyond the exchange's
	abort  bool   // the response is under way: break it so the client sees it fail
	// client: the client left; the upstream did not fail, and the
	// request is no failure for Config.OnFailure.
	client bool
}

// failed logs, answers, journals and aborts as f says.
func (s *Server) failed(w http.ResponseWriter, x *exchange, f *failure) {
	if f.msg != "" && s.log.Enabled(x.req.Context(), f.level) {
		s.log.Log(x.req.Context(), f.level, f.msg, x.logArgs(f.attrs...)...)
	}
	if f.reply != "" {
		failWith(w, x.kind, f.status, "upstream_error", f.reply)
	}
	if f.note != "" {
		s.journal.add(x.entry(0, f.note, f.status))
		if !f.client {
			s.failedUpstream(x, f.note)
		}
	}
	if f.abort {
		panic(http.ErrAbortHandler)
	}
}

// failedUpstream reports to Config.OnFailure a request that left nothing
// recorded, for the reason note.
func (s *Server) failedUpstream(x *exchange, note string) {
	if s.cfg.OnFailure != nil {
		s.cfg.OnFailure(fmt.Sprintf("llmproxy: cassette %s: %s %s to upstream %s (%s): %s", x.tape.name,
			x.req.Method, cassette.ProxyPath(x.route.name, x.mreq.Path), x.route.name, x.route.base.Redacted(), note))
	}
}

// send builds the upstream request, from the configured base URL and the
// client's path, query, headers and body, and sends it.
func (s *Server) send(x *exchange, watch *upstreamWatch) (*http.Response, time.Time, *failure) {
	out, err := http.NewRequestWithContext(watch.ctx, x.req.Method, upstreamURL(x.route, x.req.URL.RawQuery), bytes.NewReader(x.body))
	if err != nil {
		return nil, time.Time{}, &failure{status: http.StatusBadGateway, note: "upstream request: " + err.Error(),
			reply: fmt.Sprintf("llmproxy: upstream %s: %v", x.route.name, err)}
	}
	out.Header = outgoingHeaders(x.req.Header)
	out.ContentLength = int64(len(x.body))
	sent := time.Now()
	resp, err := s.transport.RoundTrip(out)
	if err != nil {
		return nil, sent, s.unanswered(x, watch, err)
	}
	watch.heard()
	return resp, sent, nil
}

// unanswered is the failure of a request the upstream sent no response to:
// a 504 when it was silent for too long, else a 502.
func (s *Server) unanswered(x *exchange, watch *upstreamWatch, err error) *failure {
	f := &failure{status: http.StatusBadGateway, note: "upstream failed: " + err.Error(),
		reply: fmt.Sprintf("llmproxy: upstream %s (%s) failed: %v", x.route.name, x.route.base.Redacted(), err),
		level: slog.LevelWarn, msg: "upstream failed", attrs: []any{"err", err}}
	// The silence timer and the transport's ResponseHeaderTimeout race for
	// the same deadline; either way the upstream was silent.
	var ne net.Error
	if watch.timedOut() || (errors.As(err, &ne) && ne.Timeout()) {
		f.status = http.StatusGatewayTimeout
		f.reply = fmt.Sprintf("llmproxy: upstream %s (%s) sent no response within %s (--upstream-timeout)",
			x.route.name, x.route.base.Redacted(), s.cfg.UpstreamTimeout)
	}
	if x.req.Context().Err() != nil {
		f.reply = "" // no one to answer
	}
	return f
}

// openBody undoes the response's Content-Encoding. A compressed body that
// does not decode fails at its first read (Go's transport decodes gzip
// lazily), so that read is made now, before the status line goes out: the
// client gets a clear 502, not a 200 that breaks.
func (s *Server) openBody(x *exchange, resp *http.Response, watch *upstreamWatch) (*upstreamBody, *failure) {
	r, decoded, err := decodeBody(resp)
	if err != nil {
		return nil, &failure{status: http.StatusBadGateway, note: "upstream response: " + err.Error(),
			reply: fmt.Sprintf("llmproxy: upstream %s: %v", x.route.name, err)}
	}
	body := newUpstreamBody(r, decoded)
	if !decoded && !resp.Uncompressed {
		return body, nil
	}
	if err := body.peek(); err != nil {
		body.release()
		if watch.clientLeft() {
			return nil, &failure{}
		}
		msg := fmt.Sprintf("llmproxy: upstream %s: its body does not decode as its Content-Encoding says: %v", x.route.name, err)
		return nil, &failure{status: http.StatusBadGateway, reply: msg, note: msg,
			level: slog.LevelWarn, msg: "upstream body does not decode", attrs: []any{"err", err}}
	}
	return body, nil
}

// finish makes the interaction of a completed response, redacts it and
// commits it to its slot; the write is logged and journaled when it is
// done. In auto mode an interaction whose response reached the client
// whole is consumed.
func (s *Server) finish(x *exchange, sl *slot, resp *http.Response, rec *teeStream, delivered bool) {
	if !delivered {
		s.log.InfoContext(x.req.Context(), "client left before the end of the response; the upstream completed, so it is recorded", x.logArgs()...)
	}
	i := x.interaction(resp.StatusCode, resp.Header, rec)
	s.redactor.Redact(i)
	status, ms := resp.StatusCode, cassette.Millis(rec.end.Sub(x.start))
	commit, stored := sl.commit, make(chan struct{})
	if s.cfg.Sync {
		commit = sl.commitNow
		defer func() { <-stored }()
	}
	held := rec.held
	commit(i, x.key, x.rules.matcher.Shape(x.mreq), func(id uint64, err error) {
		defer close(stored)
		s.recording.give(held)
		if err != nil {
			s.log.ErrorContext(x.req.Context(), "cassette write failed", x.logArgs("err", err)...)
			s.journal.add(x.entry(0, "cassette write failed: "+err.Error(), status))
			s.failedUpstream(x, "cassette write failed: "+err.Error())
			return
		}
		if delivered && x.rules.mode == ModeAuto {
			x.tape.plays.markConsumed(id)
		}
		if s.log.Enabled(x.req.Context(), slog.LevelInfo) {
			s.log.InfoContext(x.req.Context(), "recorded", x.logArgs("interaction", id, "status", status, "ms", ms)...)
		}
		x.tape.stats.record()
		e := x.entry(id, "", status)
		e.Recorded = true
		s.journal.add(e)
	})
}

// interaction is what the exchange recorded, before redaction.
func (x *exchange) interaction(status int, header http.Header, rec *teeStream) *cassette.Interaction {
	i := &cassette.Interaction{
		Upstream:   x.route.name,
		Provider:   x.kind.Provider(),
		Kind:       string(x.kind),
		RecordedAt: x.start.UTC(),
		Request: cassette.Request{
			Method: x.req.Method, Path: x.route.path, Query: x.req.URL.RawQuery,
			Headers: x.req.Header, Body: x.body,
		},
		Response: cassette.Response{
			Status: status, Headers: header,
			TTFBMillis: cassette.Millis(rec.first.Sub(rec.sent)), DurationMillis: cassette.Millis(rec.end.Sub(rec.sent)),
		},
	}
	if rec.first.IsZero() {
		i.Response.TTFBMillis = i.Response.DurationMillis
	}
	if rec.streamed() {
		i.Response.Framing = rec.framing.String()
		i.Response.Events = rec.events
	} else {
		i.Response.Body = rec.body
	}
	return i
}

// clientGrace is how long an upstream response is still read, to be
// recorded, after its client went away.
const clientGrace = 2 * time.Second

// upstreamWatch bounds an upstream exchange. Its context, under which the
// upstream request runs, is cancelled with errUpstreamTimeout when the
// upstream has been silent for Config.UpstreamTimeout, and with
// errClientLeft clientGrace after the client went away: the exchange
// outlives the client a little, so that a client that closes its
// connection as soon as it has read the last event does not lose the
// recording of a response that was about to complete.
type upstreamWatch struct {
	ctx       context.Context
	cancel    context.CancelCauseFunc
	timeout   time.Duration
	silence   *time.Timer
	stopGrace func() bool
}

// watchUpstream starts the watch of an exchange whose client's request has
// the context client.
func (s *Server) watchUpstream(client context.Context) *upstreamWatch {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(client))
	w := &upstreamWatch{ctx: ctx, cancel: cancel, timeout: s.cfg.UpstreamTimeout}
	w.stopGrace = context.AfterFunc(client, func() {
		time.AfterFunc(clientGrace, func() { cancel(errClientLeft) })
	})
	w.silence = time.AfterFunc(w.timeout, func() { cancel(errUpstreamTimeout) })
	return w
}

// heard restarts the silence timer: the upstream sent something.
func (w *upstreamWatch) heard() { w.silence.Reset(w.timeout) }

// pause stops the silence timer while the proxy, not the upstream, is
// the one being slow (writing to the client); heard restarts it.
func (w *upstreamWatch) pause() { w.silence.Stop() }

// stop ends the watch and cancels its context.
func (w *upstreamWatch) stop() {
	w.silence.Stop()
	w.stopGrace()
	w.cancel(nil)
}

// cause is why the watch's context ended, nil while it has not.
func (w *upstreamWatch) cause() error { return context.Cause(w.ctx) }

func (w *upstreamWatch) timedOut() bool   { return errors.Is(w.cause(), errUpstreamTimeout) }
func (w *upstreamWatch) clientLeft() bool { return errors.Is(w.cause(), errClientLeft) }
