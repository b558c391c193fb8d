package proxy

import (
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/andybalholm/brotli"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/wire"
)

// clientGrace is how long an upstream response is still read, to be
// recorded, after its client went away.
const clientGrace = 2 * time.Second

// hopHeaders are never forwarded in either direction.
var hopHeaders = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Te", "Trailer",
	"Transfer-Encoding", "Upgrade",
}

// outgoingHeaders copies the client's headers for the upstream, without
// connection headers, forwarding headers, llmproxy's own headers, Host, and
// Accept-Encoding (the transport negotiates and decodes gzip itself).
func outgoingHeaders(in http.Header) http.Header {
	out := in.Clone()
	for _, h := range strings.Split(in.Get("Connection"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			out.Del(h)
		}
	}
	for _, h := range hopHeaders {
		out.Del(h)
	}
	for k := range out {
		if strings.HasPrefix(k, "X-Forwarded-") || strings.HasPrefix(k, "X-Llmproxy-") || k == "Forwarded" || k == "X-Real-Ip" {
			delete(out, k)
		}
	}
	out.Del("Accept-Encoding")
	out.Del("Host")
	return out
}

// record forwards the request, tees the response to the client as it arrives,
// and writes the interaction once the response completed, in the order the
// requests arrived (see tape.arrive).
func (s *Server) record(w http.ResponseWriter, x *exchange) {
	// The journal's readers wait for the interaction to be written (or
	// dropped), which may be after this handler returns.
	sl := x.tape.arrive(s.journal.begin())
	defer sl.abandon()
	s.forward(w, x, sl)
}

// forward does the upstream exchange and commits the interaction to sl when
// the response completed.
func (s *Server) forward(w http.ResponseWriter, x *exchange, sl *slot) {
	// The upstream exchange outlives the client by a short grace: a client
	// that closes its connection as soon as it has read the last event must
	// not lose the recording of a response that was about to complete.
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(x.req.Context()))
	defer cancel(nil)
	stopGrace := context.AfterFunc(x.req.Context(), func() {
		time.AfterFunc(clientGrace, func() { cancel(errClientLeft) })
	})
	defer stopGrace()
	idle := time.AfterFunc(s.cfg.UpstreamTimeout, func() { cancel(errUpstreamTimeout) })
	defer idle.Stop()

	target := upstreamURL(x.route, x.req.URL.RawQuery)
	out, err := http.NewRequestWithContext(ctx, x.req.Method, target, bodyReader(x.body))
	if err != nil {
		s.fail(w, x.kind, http.StatusBadGateway, "upstream_error", fmt.Sprintf("llmproxy: upstream %s: %v", x.route.name, err))
		s.journal.add(x.entry(0, "upstream request: "+err.Error(), http.StatusBadGateway))
		return
	}
	out.Header = outgoingHeaders(x.req.Header)
	out.ContentLength = int64(len(x.body))
	sent := time.Now()
	resp, err := s.transport.RoundTrip(out)
	if err != nil {
		status, msg := http.StatusBadGateway, fmt.Sprintf("llmproxy: upstream %s (%s) failed: %v", x.route.name, x.route.base.Redacted(), err)
		// The idle timer and the transport's ResponseHeaderTimeout race
		// for the same deadline; either way the upstream was silent.
		var ne net.Error
		if errors.Is(context.Cause(ctx), errUpstreamTimeout) || (errors.As(err, &ne) && ne.Timeout()) {
			status = http.StatusGatewayTimeout
			msg = fmt.Sprintf("llmproxy: upstream %s (%s) sent no response within %s (--upstream-timeout)", x.route.name, x.route.base.Redacted(), s.cfg.UpstreamTimeout)
		}
		s.log.WarnContext(ctx, "upstream failed", append(x.logArgs, "err", err)...)
		if x.req.Context().Err() == nil {
			s.fail(w, x.kind, status, "upstream_error", msg)
		}
		s.journal.add(x.entry(0, "upstream failed: "+err.Error(), status))
		return
	}
	defer resp.Body.Close()
	idle.Reset(s.cfg.UpstreamTimeout)

	body, decoded, err := decodeBody(resp)
	if err != nil {
		s.fail(w, x.kind, http.StatusBadGateway, "upstream_error", fmt.Sprintf("llmproxy: upstream %s: %v", x.route.name, err))
		s.journal.add(x.entry(0, "upstream response: "+err.Error(), http.StatusBadGateway))
		return
	}
	buf := bufPool.Get().(*[]byte)
	defer bufPool.Put(buf)
	// A compressed body that does not decode fails at its first read (Go's
	// transport decodes gzip lazily). That read happens before the status
	// line goes out, so the client gets a clear 502, not a 200 that breaks.
	peeked, peekN, peekErr := false, 0, error(nil)
	if decoded || resp.Uncompressed {
		for peekN == 0 && peekErr == nil {
			peekN, peekErr = body.Read(*buf)
		}
		if peekErr != nil && peekErr != io.EOF {
			if errors.Is(context.Cause(ctx), errClientLeft) {
				return
			}
			msg := fmt.Sprintf("llmproxy: upstream %s: its body does not decode as its Content-Encoding says: %v", x.route.name, peekErr)
			s.log.WarnContext(x.req.Context(), "upstream body does not decode", append(x.logArgs, "err", peekErr)...)
			s.fail(w, x.kind, http.StatusBadGateway, "upstream_error", msg)
			s.journal.add(x.entry(0, msg, http.StatusBadGateway))
			return
		}
		peeked = true
	}
	framing := wire.DetectFraming(resp.Header.Get("Content-Type"))
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = append([]string(nil), vs...)
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	if decoded {
		h.Del("Content-Encoding")
		h.Del("Content-Length")
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	_ = rc.Flush()

	t := teeStream{framing: framing, splitter: wire.NewSplitter(framing), start: sent}
	clientGone := false
	for {
		n, rerr := peekN, peekErr
		if peeked {
			peeked = false
		} else {
			n, rerr = body.Read(*buf)
		}
		if n > 0 {
			idle.Reset(s.cfg.UpstreamTimeout)
			chunk := (*buf)[:n]
			t.push(chunk)
			if !clientGone {
				if _, werr := w.Write(chunk); werr != nil {
					clientGone = true
				} else if ferr := rc.Flush(); ferr != nil {
					clientGone = true
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil && errors.Is(context.Cause(ctx), errClientLeft) {
			s.log.InfoContext(x.req.Context(), "client left mid-response; nothing recorded", x.logArgs...)
			s.journal.add(x.entry(0, "client left mid-response", resp.StatusCode))
			return
		}
		if rerr != nil {
			// The upstream broke mid-response. The status line is out, so the
			// client must see a broken response, not a complete one.
			cause := context.Cause(ctx)
			if cause == nil {
				cause = rerr
			}
			s.log.WarnContext(x.req.Context(), "upstream broke mid-response; nothing recorded", append(x.logArgs, "err", cause)...)
			s.journal.add(x.entry(0, "upstream broke mid-response: "+cause.Error(), resp.StatusCode))
			if !clientGone {
				panic(http.ErrAbortHandler)
			}
			return
		}
	}
	end := time.Now()
	if clientGone {
		s.log.InfoContext(x.req.Context(), "client left before the end of the response; the upstream completed, so it is recorded", x.logArgs...)
	}
	if rest := t.finish(); len(rest) > 0 && !t.acceptRest(rest) {
		s.log.WarnContext(x.req.Context(), "stream ended mid-event; nothing recorded", append(x.logArgs, "tail_bytes", len(rest))...)
		s.journal.add(x.entry(0, "upstream stream ended mid-event", resp.StatusCode))
		return
	}
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
			Status: resp.StatusCode, Headers: resp.Header,
			TTFBMillis: cassette.Millis(t.first.Sub(sent)), DurationMillis: cassette.Millis(end.Sub(sent)),
		},
	}
	if t.first.IsZero() {
		i.Response.TTFBMillis = i.Response.DurationMillis
	}
	if framing == wire.FramingNone {
		i.Response.Body = t.body
	} else {
		i.Response.Framing = framingName(framing)
		i.Response.Events = t.events
	}
	s.redactor.Redact(i)
	delivered, status := !clientGone, resp.StatusCode
	sl.commit(i, x.key, s.matcher.Shape(x.mreq), func(id uint64, err error) {
		if err != nil {
			s.log.ErrorContext(x.req.Context(), "cassette write failed", append(x.logArgs, "err", err)...)
			s.journal.add(x.entry(0, "cassette write failed: "+err.Error(), status))
			return
		}
		if delivered && s.cfg.Mode == ModeAuto {
			x.tape.markConsumed(id)
		}
		s.log.InfoContext(x.req.Context(), "recorded", append(x.logArgs, "interaction", id, "status", status, "ms", cassette.Millis(end.Sub(x.start)))...)
		s.journal.add(x.entry(id, "", status))
	})
}

func framingName(f wire.Framing) string {
	switch f {
	case wire.FramingSSE:
		return "sse"
	case wire.FramingNDJSON:
		return "ndjson"
	}
	return ""
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// teeStream collects what the client was sent, event by event with arrival
// times for a stream.
type teeStream struct {
	framing  wire.Framing
	splitter *wire.Splitter
	start    time.Time
	first    time.Time
	body     []byte
	events   []cassette.Event
}

func (t *teeStream) push(p []byte) {
	now := time.Now()
	if t.first.IsZero() {
		t.first = now
	}
	if t.framing == wire.FramingNone {
		t.body = append(t.body, p...)
		return
	}
	t.add(t.splitter.Push(p), now)
}

func (t *teeStream) add(evs []wire.Event, now time.Time) {
	for _, e := range evs {
		t.events = append(t.events, cassette.Event{AtMillis: cassette.Millis(now.Sub(t.start)), Data: cassette.Body(e.Raw)})
	}
}

// finish takes the events that only the end of the stream completes (an
// SSE stream whose lines end in a bare CR ends its last event with its last
// byte) and returns the bytes left after them.
func (t *teeStream) finish() []byte {
	if t.framing == wire.FramingNone {
		return nil
	}
	evs, rest := t.splitter.Finish()
	t.add(evs, time.Now())
	return rest
}

// acceptRest decides whether bytes after the last complete event end the
// stream properly: an NDJSON last line without its newline does; an SSE
// event without its blank line does not.
func (t *teeStream) acceptRest(rest []byte) bool {
	if t.framing != wire.FramingNDJSON {
		return false
	}
	at := time.Now()
	t.events = append(t.events, cassette.Event{AtMillis: cassette.Millis(at.Sub(t.start)), Data: cassette.Body(append([]byte(nil), rest...))})
	return true
}

// decodeBody undoes a Content-Encoding the transport left in place.
func decodeBody(resp *http.Response) (io.Reader, bool, error) {
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		return resp.Body, false, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, false, fmt.Errorf("its body does not decode as its Content-Encoding says: %w", err)
		}
		return zr, true, nil
	case "deflate":
		zr, err := zlib.NewReader(resp.Body)
		if err != nil {
			return nil, false, fmt.Errorf("its body does not decode as its Content-Encoding says: %w", err)
		}
		return zr, true, nil
	case "br":
		return brotli.NewReader(resp.Body), true, nil
	default:
		return nil, false, fmt.Errorf("response Content-Encoding %q is not supported", enc)
	}
}
