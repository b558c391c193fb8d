package fake

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Recorded is one request as an [Upstream] received it.
type Recorded struct {
	Method   string
	Path     string // the URL path, decoded
	RawQuery string // the query, encoded, without '?'
	Header   http.Header
	Body     []byte
}

// An Option changes how an [Upstream] answers.
type Option func(*config)

type config struct {
	headers    []pair // required header values
	queries    []pair // required query parameter values
	delay      time.Duration
	failAfter  int // -1: never
	status     *Response
	gzipBodies bool
}

type pair struct{ name, value string }

// RequireHeader makes the upstream answer a request whose header name is not
// exactly value with the provider's authentic authentication error (chosen by
// the request path): OpenAI's captured 401 invalid_api_key, Anthropic's
// captured 401 authentication_error, or Gemini's captured 400
// API_KEY_INVALID. Several requirements must all hold.
func RequireHeader(name, value string) Option {
	return func(c *config) { c.headers = append(c.headers, pair{name, value}) }
}

// RequireQuery is [RequireHeader] for a query parameter, such as Gemini's
// "key".
func RequireQuery(name, value string) Option {
	return func(c *config) { c.queries = append(c.queries, pair{name, value}) }
}

// EventDelay makes the upstream wait d before writing each event of a
// streamed response (the headers go out at once). It lets a test see events
// arrive one by one through the proxy.
func EventDelay(d time.Duration) Option {
	return func(c *config) { c.delay = d }
}

// FailAfterEvents makes the upstream reset the connection (TCP RST) after the
// headers and n events of each streamed response, so the client sees the
// stream break. A non-streamed body counts as one event: n = 0 cuts it off
// after the headers, a larger n leaves it whole.
func FailAfterEvents(n int) Option {
	return func(c *config) { c.failAfter = max(n, 0) }
}

// Status makes the upstream answer every request that passes the
// RequireHeader and RequireQuery checks with code and body instead of asking
// the script. The Content-Type is application/json when body is JSON, else
// text/plain.
func Status(code int, body []byte) Option {
	ct := "text/plain; charset=utf-8"
	if json.Valid(body) {
		ct = "application/json"
	}
	resp := &Response{Status: code, Header: http.Header{"Content-Type": {ct}}, Body: bytes.Clone(body)}
	return func(c *config) { c.status = resp }
}

// Gzip makes the upstream gzip every non-streamed body and send it with
// Content-Encoding: gzip, whatever the request's Accept-Encoding, to exercise
// the proxy's decoding. Streams are never encoded.
func Gzip() Option {
	return func(c *config) { c.gzipBodies = true }
}

// fixedDate is the Date of responses whose headers bring none (Gemini,
// Ollama, Verbatim and Status answers without one): the first line of the
// captured Ollama stream.
const fixedDate = "Mon, 07 Jul 2025 20:22:19 GMT"

// Upstream is a fake provider API on an httptest server on loopback.
type Upstream struct {
	srv    *httptest.Server
	script Script
	cfg    config

	hits     atomic.Int64
	mu       sync.Mutex
	requests []Recorded
	answered int

	done      chan struct{} // closed by Close: streams stop waiting
	closeOnce sync.Once
}

// New starts an upstream answering with script and closes it when the test
// ends. script may be nil only when [Status] is given.
func New(t testing.TB, script Script, opts ...Option) *Upstream {
	t.Helper()
	u := Start(script, opts...)
	t.Cleanup(u.Close)
	return u
}

// Start is [New] for code that is not a test, such as the demo cassette
// generator: the caller must call Close.
func Start(script Script, opts ...Option) *Upstream {
	u := &Upstream{script: script, cfg: config{failAfter: -1}, done: make(chan struct{})}
	for _, o := range opts {
		o(&u.cfg)
	}
	if script == nil && u.cfg.status == nil {
		panic("fake: New needs a script or a Status option")
	}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	return u
}

// URL is the upstream's base URL, "http://127.0.0.1:PORT", without a
// trailing slash.
func (u *Upstream) URL() string { return u.srv.URL }

// Close shuts the upstream down: open streams are cut short, and later
// requests fail to connect. It is safe to call more than once; [New] calls it
// when the test ends.
func (u *Upstream) Close() {
	u.closeOnce.Do(func() {
		close(u.done)
		u.srv.CloseClientConnections()
		u.srv.Close()
	})
}

// Hits is the number of requests received so far, answered or not.
func (u *Upstream) Hits() int { return int(u.hits.Load()) }

// Requests returns a copy of every request received so far, in arrival order.
func (u *Upstream) Requests() []Recorded {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]Recorded, len(u.requests))
	for i, r := range u.requests {
		r.Header = r.Header.Clone()
		r.Body = bytes.Clone(r.Body)
		out[i] = r
	}
	return out
}

func (u *Upstream) serve(w http.ResponseWriter, r *http.Request) {
	u.hits.Add(1)
	body, err := io.ReadAll(r.Body)
	rec := Recorded{
		Method:   r.Method,
		Path:     r.URL.Path,
		RawQuery: r.URL.RawQuery,
		Header:   r.Header.Clone(),
		Body:     body,
	}
	u.mu.Lock()
	u.requests = append(u.requests, rec)
	u.mu.Unlock()
	if err != nil {
		// The client went away while sending; there is nobody to answer.
		return
	}

	var resp *Response
	switch {
	case !u.authorized(r):
		resp = authFailure(providerOfPath(r.URL.Path))
	case u.cfg.status != nil:
		resp = u.cfg.status.clone()
	default:
		u.mu.Lock()
		n := u.answered
		u.answered++
		u.mu.Unlock()
		resp = u.script.Respond(&Request{Recorded: rec, N: n})
		if resp == nil {
			resp = apiError(providerOfPath(r.URL.Path), http.StatusInternalServerError, "fake: the script returned no response")
		}
	}
	u.write(w, r, resp)
}

func (u *Upstream) authorized(r *http.Request) bool {
	for _, p := range u.cfg.headers {
		if r.Header.Get(p.name) != p.value {
			return false
		}
	}
	q := r.URL.Query()
	for _, p := range u.cfg.queries {
		if q.Get(p.name) != p.value {
			return false
		}
	}
	return true
}

func (u *Upstream) write(w http.ResponseWriter, r *http.Request, resp *Response) {
	h := w.Header()
	for k, v := range servable(resp.Header) {
		h[k] = v
	}
	if _, ok := h["Date"]; !ok {
		// The server would stamp the current time; keep recordings stable.
		h.Set("Date", fixedDate)
	}
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	rc := http.NewResponseController(w)

	if !resp.Streamed() {
		body := resp.Body
		if u.cfg.gzipBodies {
			body = gzipped(body)
			h.Set("Content-Encoding", "gzip")
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		if u.cfg.failAfter == 0 {
			_ = rc.Flush()
			reset(rc)
			return
		}
		_, _ = w.Write(body)
		return
	}

	w.WriteHeader(status)
	_ = rc.Flush()
	for i, ev := range resp.Events {
		if u.cfg.failAfter == i {
			reset(rc)
			return
		}
		if u.cfg.delay > 0 {
			switch u.wait(r, u.cfg.delay) {
			case clientLeft:
				return
			case upstreamClosed:
				reset(rc) // a clean end would pass for a complete stream
				return
			}
		}
		if _, err := w.Write(ev); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
	if u.cfg.failAfter >= len(resp.Events) {
		reset(rc)
	}
}

type waited int

const (
	slept waited = iota
	clientLeft
	upstreamClosed
)

// wait sleeps d unless the client leaves or the upstream closes first.
func (u *Upstream) wait(r *http.Request, d time.Duration) waited {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return slept
	case <-r.Context().Done():
		return clientLeft
	case <-u.done:
		return upstreamClosed
	}
}

// reset takes the connection from the server and closes it with a TCP RST,
// so the client sees a broken response rather than a clean end.
func reset(rc *http.ResponseController) {
	conn, _, err := rc.Hijack()
	if err != nil {
		// Not hijackable (HTTP/2): abort the stream instead.
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}
