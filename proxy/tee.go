package proxy

import (
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/andybalholm/brotli"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/internal/hop"
	"github.com/llmproxy/llmproxy/wire"
)

// tee copies the upstream body to the client read by read, flushing each
// read, and collects it into rec. It ends at the end of the body, which for
// a stream must fall between events, or with a failure when the upstream
// breaks or the client has been gone for longer than the grace period.
func (s *Server) tee(status int, body *upstreamBody, c *client, rec *teeStream, watch *upstreamWatch) *failure {
	for {
		chunk, err := body.next()
		if len(chunk) > 0 {
			watch.heard()
			if !s.recording.take(int64(len(chunk))) {
				rec.drop()
				return &failure{status: status, note: fmt.Sprintf("responses being recorded at once over their total limit (%d bytes decoded)", s.cfg.MaxRecordingTotal),
					level: slog.LevelWarn, msg: "responses being recorded at once over their total limit; cut and nothing recorded",
					attrs: []any{"max_recording_total", s.cfg.MaxRecordingTotal}, abort: !c.gone}
			}
			rec.held += int64(len(chunk))
			if rec.size += int64(len(chunk)); rec.size > s.cfg.MaxResponse {
				rec.drop()
				return &failure{status: status, note: fmt.Sprintf("response over --max-response (%d bytes decoded)", s.cfg.MaxResponse),
					level: slog.LevelWarn, msg: "response over --max-response; cut and nothing recorded",
					attrs: []any{"max_response", s.cfg.MaxResponse}, abort: !c.gone}
			}
			// The client gets the bytes first; collecting them (a copy of
			// each event, and the allocations that may make the collector
			// run) waits until they are on their way. Only the upstream's
			// silence counts: time blocked writing to a slow client does
			// not.
			at := time.Now()
			watch.pause()
			c.send(chunk)
			watch.heard()
			rec.push(chunk, at)
		}
		switch {
		case err == io.EOF:
			rec.end = time.Now()
			if rest := rec.finish(); len(rest) > 0 && !rec.acceptRest(rest) {
				note := "upstream stream ended mid-event"
				if err := rec.splitter.Err(); err != nil {
					note = "upstream stream: " + err.Error() // an event stream message that is not one
				}
				return &failure{status: status, note: note,
					level: slog.LevelWarn, msg: "stream ended mid-event; nothing recorded", attrs: []any{"tail_bytes", len(rest)}}
			}
			return nil
		case err != nil && watch.clientLeft():
			return &failure{status: status, note: "client left mid-response", client: true,
				level: slog.LevelInfo, msg: "client left mid-response; nothing recorded"}
		case err != nil:
			// The upstream broke mid-response. The status line is out, so
			// the client must see a broken response, not a complete one.
			cause := watch.cause()
			if cause == nil {
				cause = err
			}
			return &failure{status: status, note: "upstream broke mid-response: " + cause.Error(),
				level: slog.LevelWarn, msg: "upstream broke mid-response; nothing recorded", attrs: []any{"err", cause},
				abort: !c.gone}
		}
	}
}

// startResponse sends the client the upstream's status line and headers,
// without the hop-by-hop headers, sandboxed (see sandbox) and, for a body
// the proxy decodes, without its Content-Encoding and Content-Length.
func startResponse(w http.ResponseWriter, resp *http.Response, decoded bool) *client {
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = append([]string(nil), vs...)
	}
	hop.Remove(h)
	sandbox(h)
	if decoded {
		h.Del("Content-Encoding")
		h.Del("Content-Length")
	}
	w.WriteHeader(resp.StatusCode)
	c := &client{w: w, rc: http.NewResponseController(w)}
	_ = c.rc.Flush()
	return c
}

// client is the client's side of the tee. Once a write or flush to it
// fails it is gone, and the tee goes on reading the upstream without it.
type client struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	gone bool
	hold bool   // hold back the last byte sent (see release)
	held []byte // the byte held back
}

// send writes p to the client and flushes it; with hold, all but its
// last byte, which waits for the next send or release.
func (c *client) send(p []byte) {
	if c.gone || len(p) == 0 {
		return
	}
	if c.hold {
		c.held = append(c.held, p...)
		p, c.held = c.held[:len(c.held)-1], c.held[len(c.held)-1:]
	}
	c.write(p)
}

// release sends what hold held back.
func (c *client) release() {
	held := c.held
	c.held, c.hold = nil, false
	c.send(held)
}

func (c *client) write(p []byte) {
	if _, err := c.w.Write(p); err != nil {
		c.gone = true
	} else if err := c.rc.Flush(); err != nil {
		c.gone = true
	}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// upstreamBody reads a response body, decoded, into a pooled buffer.
type upstreamBody struct {
	r       io.Reader
	decoded bool // the proxy undoes a Content-Encoding
	buf     *[]byte
	// held is a read made by peek and not yet handed out by next.
	held bool
	n    int
	err  error
}

func newUpstreamBody(r io.Reader, decoded bool) *upstreamBody {
	return &upstreamBody{r: r, decoded: decoded, buf: bufPool.Get().(*[]byte)}
}

// peek reads until there are bytes or an error, and holds them for next.
// It returns the error, unless it is io.EOF.
func (b *upstreamBody) peek() error {
	for b.n == 0 && b.err == nil {
		b.n, b.err = b.r.Read(*b.buf)
	}
	b.held = true
	if b.err == io.EOF {
		return nil
	}
	return b.err
}

// next returns the next read: bytes valid until the following call, and
// the read's error.
func (b *upstreamBody) next() ([]byte, error) {
	if b.held {
		b.held = false
		return (*b.buf)[:b.n], b.err
	}
	n, err := b.r.Read(*b.buf)
	return (*b.buf)[:n], err
}

// release gives the buffer back; the body is not read again.
func (b *upstreamBody) release() { bufPool.Put(b.buf) }

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

// teeStream collects what the client was sent: the body, or for a stream
// its events with their arrival times, from sent (when the request went
// out) to end (when the body ended).
type teeStream struct {
	framing  wire.Framing
	splitter *wire.Splitter
	sent     time.Time
	first    time.Time // the first byte's arrival
	end      time.Time
	body     []byte
	events   []cassette.Event
	size     int64 // decoded bytes read so far
	held     int64 // bytes taken from Server.recording, given back once written or dropped
}

// drop lets go of what was collected: it will not be recorded.
func (t *teeStream) drop() { t.body, t.events = nil, nil }

// newTeeStream collects a response whose headers are h.
func newTeeStream(h http.Header, sent time.Time) *teeStream {
	f := wire.DetectFraming(h.Get("Content-Type"))
	return &teeStream{framing: f, splitter: wire.NewSplitter(f), sent: sent}
}

// streamed reports whether the response is collected event by event.
func (t *teeStream) streamed() bool { return t.framing != wire.FramingNone }

// push collects p, which arrived at now.
func (t *teeStream) push(p []byte, now time.Time) {
	if t.first.IsZero() {
		t.first = now
	}
	if !t.streamed() {
		t.body = append(t.body, p...)
		return
	}
	t.add(t.splitter.Push(p), now)
}

func (t *teeStream) add(evs []wire.Event, now time.Time) {
	for _, e := range evs {
		t.events = append(t.events, cassette.Event{AtMillis: cassette.Millis(now.Sub(t.sent)), Data: cassette.Body(e.Raw)})
	}
}

// finish takes the events that only the end of the stream completes (an
// SSE stream whose lines end in a bare CR ends its last event with its last
// byte) and returns the bytes left after them.
func (t *teeStream) finish() []byte {
	if !t.streamed() {
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
	t.events = append(t.events, cassette.Event{AtMillis: cassette.Millis(at.Sub(t.sent)), Data: cassette.Body(append([]byte(nil), rest...))})
	return true
}
