package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/view"
	"github.com/llmproxy/llmproxy/wire"
)

// DefaultUpstreams are the built-in upstream names of SPEC §3, plus a local
// Ollama server at its default address.
func DefaultUpstreams() map[string]*url.URL {
	return map[string]*url.URL{
		"openai":    mustURL("https://api.openai.com"),
		"anthropic": mustURL("https://api.anthropic.com"),
		"gemini":    mustURL("https://generativelanguage.googleapis.com"),
		"ollama":    mustURL("http://127.0.0.1:11434"),
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// DefaultUpstreamName is the upstream name recorded for unprefixed paths.
const DefaultUpstreamName = "default"

// DefaultMaxBody is the request body limit when Config.MaxBody is zero.
const DefaultMaxBody = 32 << 20

// Config configures a Server. Zero values mean the documented defaults.
type Config struct {
	// Mode is replay (the zero value), record or auto.
	Mode Mode
	// Cassette serves every request. Exactly one of Cassette and CassetteDir
	// is set.
	Cassette *cassette.Cassette
	// CassetteDir holds one cassette per test: the request header
	// X-Llmproxy-Cassette: NAME picks DIR/NAME.cassette, opened on first use
	// and shared by every request that names it.
	CassetteDir string
	// Upstreams are the named upstreams; nil means DefaultUpstreams.
	Upstreams map[string]*url.URL
	// Default receives unprefixed paths; nil means Upstreams["openai"].
	Default *url.URL
	// Matcher computes match keys; nil means match.New with no rules.
	Matcher *match.Matcher
	// Redactor removes secrets before anything is stored; nil means the
	// defaults of cassette.NewRedactor.
	Redactor *cassette.Redactor
	// OnExhausted decides what replay does when a request's recordings are used up.
	OnExhausted Exhausted
	// Pace and Latency shape the timing of replayed responses.
	Pace    Pace
	Latency time.Duration
	// MaxBody bounds a request body; zero means DefaultMaxBody.
	MaxBody int64
	// UpstreamTimeout bounds the wait for response headers and each later
	// read from the upstream; zero means 10 minutes.
	UpstreamTimeout time.Duration
	// Transport sends upstream requests; nil means a clone of
	// http.DefaultTransport without environment proxies.
	Transport http.RoundTripper
	// AdminToken, when set, is required on every /_llmproxy/ request:
	// Authorization: Bearer TOKEN, or the cookie the web view's login form
	// sets.
	AdminToken string
	// Logger receives one line per request; nil discards.
	Logger *slog.Logger
	// Version is written into new cassettes' metadata.
	Version string
	// LogLimit bounds the entries kept for GET /_llmproxy/log; zero means 10000.
	LogLimit int
	// OnMiss, when set, is called with the message of every miss in replay
	// (proxytest fails the test with it). It may be called concurrently.
	OnMiss func(msg string)
}

// Server is an http.Handler that records and replays.
type Server struct {
	cfg       Config
	upstreams map[string]*url.URL
	matcher   *match.Matcher
	redactor  *cassette.Redactor
	transport http.RoundTripper
	log       *slog.Logger
	router    *mux.Router
	journal   journal
	ui        *view.Handler

	mu    sync.Mutex
	tapes map[string]*tape // by cassette name ("" for Config.Cassette)
}

// New checks cfg and builds a Server.
func New(cfg Config) (*Server, error) {
	if (cfg.Cassette == nil) == (cfg.CassetteDir == "") {
		return nil, fmt.Errorf("set exactly one of Cassette and CassetteDir: %w", ErrConfig)
	}
	s := &Server{cfg: cfg, tapes: map[string]*tape{}}
	s.upstreams = cfg.Upstreams
	if s.upstreams == nil {
		s.upstreams = DefaultUpstreams()
	}
	if cfg.Default == nil {
		s.cfg.Default = s.upstreams["openai"]
		if s.cfg.Default == nil {
			s.cfg.Default = DefaultUpstreams()["openai"]
		}
	}
	for name, u := range s.upstreams {
		if name == "" || strings.ContainsAny(name, "/?#") || strings.HasPrefix(name, "_") {
			return nil, fmt.Errorf("upstream name %q: %w", name, ErrConfig)
		}
		if u == nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("upstream %s: %v is not an http(s) URL: %w", name, u, ErrConfig)
		}
	}
	s.redactor = cfg.Redactor
	if s.redactor == nil {
		r, err := cassette.NewRedactor(nil, nil)
		if err != nil {
			return nil, err
		}
		s.redactor = r
	}
	s.matcher = cfg.Matcher
	if s.matcher == nil {
		m, err := NewMatcher(match.Rules{}, s.redactor)
		if err != nil {
			return nil, err
		}
		s.matcher = m
	}
	if s.cfg.MaxBody <= 0 {
		s.cfg.MaxBody = DefaultMaxBody
	}
	if s.cfg.UpstreamTimeout <= 0 {
		s.cfg.UpstreamTimeout = 10 * time.Minute
	}
	s.transport = cfg.Transport
	if s.transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		t.ResponseHeaderTimeout = s.cfg.UpstreamTimeout
		s.transport = t
	}
	s.log = cfg.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.journal.limit = cfg.LogLimit
	if s.journal.limit <= 0 {
		s.journal.limit = 10000
	}
	if cfg.Cassette != nil {
		t, err := newTape(cfg.Cassette, cfg.Cassette.Path(), s.matcher)
		if err != nil {
			return nil, err
		}
		s.tapes[""] = t
	}
	ui, err := s.newUI()
	if err != nil {
		return nil, err
	}
	s.ui = ui
	s.router = s.routes()
	return s, nil
}

// NewMatcher builds the matcher a Server uses for rules: the rules plus the
// redactor's secrets (never compared), with conversation-aware diagnostics.
// A rule that compares a secret header is an error.
func NewMatcher(rules match.Rules, r *cassette.Redactor) (*match.Matcher, error) {
	for _, h := range rules.Headers {
		if r.IsSecretHeader(h) {
			return nil, fmt.Errorf("match header %s: it carries a secret and is never stored: %w", h, ErrConfig)
		}
	}
	rules.SecretQuery = append(append([]string{}, rules.SecretQuery...), cassette.DefaultSecretQuery...)
	rules.Ignore = append(append([]string{}, rules.Ignore...), r.BodyPaths()...)
	return match.New(rules, func(kind string, body []byte, path string) string {
		return wire.DescribePath(wire.Kind(kind), body, path)
	})
}

// Mode is the server's mode.
func (s *Server) Mode() Mode { return s.cfg.Mode }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// Close writes every recorded interaction whose response has ended (they
// are written behind the responses, see tape.arrive), then closes the
// cassettes the server opened from CassetteDir. A Config.Cassette belongs
// to the caller and stays open: close it after Close. Call Close once the
// HTTP server has stopped; a response that ends later is not recorded.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for name, t := range s.tapes {
		if name != "" {
			errs = append(errs, t.close())
		} else {
			t.stopWriter() // the caller closes Config.Cassette
		}
	}
	s.tapes = map[string]*tape{}
	return errors.Join(errs...)
}

func (s *Server) routes() *mux.Router {
	r := mux.NewRouter()
	r.SkipClean(true)
	r.UseEncodedPath()
	r.Path(strings.TrimSuffix(view.Prefix, "/")).Handler(s.ui) // the view checks its own token
	r.PathPrefix(view.Prefix).Handler(s.ui)
	api := r.PathPrefix("/_llmproxy/").Subrouter()
	api.Use(s.adminAuth)
	api.HandleFunc("/health", s.handleHealth).Methods(http.MethodGet)
	api.HandleFunc("/interactions", s.handleInteractions).Methods(http.MethodGet)
	api.HandleFunc("/log", s.handleLog).Methods(http.MethodGet)
	api.HandleFunc("/unused", s.handleUnused).Methods(http.MethodGet)
	api.HandleFunc("/fixtures/{call_id}", s.handleFixture).Methods(http.MethodGet)
	// gorilla/mux runs no middleware for these: the token guards them too.
	api.NotFoundHandler = s.adminAuth(http.HandlerFunc(s.handleAPINotFound))
	api.MethodNotAllowedHandler = s.adminAuth(http.HandlerFunc(s.handleAPINotFound))
	r.Path("/_llmproxy").Handler(s.adminAuth(http.HandlerFunc(s.handleAPINotFound)))
	r.PathPrefix("/").HandlerFunc(s.handleProxy)
	return r
}

// route is where a request goes.
type route struct {
	name string   // upstream name
	base *url.URL // upstream base URL
	path string   // upstream-relative path, escaped as received
}

// route picks the upstream from the first path segment only.
func (s *Server) route(r *http.Request) route {
	p := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(p, "/"); ok {
		name, tail, _ := strings.Cut(rest, "/")
		if u, ok := s.upstreams[name]; ok {
			return route{name: name, base: u, path: "/" + tail}
		}
	}
	return route{name: DefaultUpstreamName, base: s.cfg.Default, path: p}
}

// exchange is one request being handled.
type exchange struct {
	start   time.Time
	route   route
	tape    *tape
	req     *http.Request
	body    []byte
	kind    wire.Kind
	mreq    *match.Request
	key     string
	logArgs []any
	// closest and diffs are what a miss was compared with, for the log.
	closest uint64
	diffs   []match.Difference
}

func (s *Server) handleProxy(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rt := s.route(r)
	kind := wire.Detect(r.Method, rt.path)
	t, err := s.tapeFor(r)
	if err != nil {
		s.failTape(w, r, kind, err)
		return
	}
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
		s.journal.add(logEntry{Time: start, Cassette: t.name, Method: r.Method, Path: rt.path, Kind: string(kind), Miss: err.Error()})
		return
	}
	if s.cfg.Mode == ModeReplay {
		s.recordedRoute(x)
	}
	x.logArgs = []any{"cassette", t.name, "api", string(x.kind), "method", r.Method, "path", x.route.path}
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

// upstreamURL builds the outgoing URL from the configured base only.
func upstreamURL(rt route, rawQuery string) string {
	base := strings.TrimSuffix(rt.base.String(), "/")
	u := base + rt.path
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	return u
}

func bodyReader(b []byte) io.Reader { return bytes.NewReader(b) }

func contextDone(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}
