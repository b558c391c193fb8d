package proxy

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/faults"
	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/scenario"
	"github.com/llmproxy/llmproxy/view"
)

// DefaultMaxBody is the request body limit when Config.MaxBody is zero.
const DefaultMaxBody = 32 << 20

// DefaultMaxResponse is the recorded response limit when Config.MaxResponse is zero.
const DefaultMaxResponse = 256 << 20

// DefaultReadTimeout is the request body read limit when Config.ReadTimeout is zero.
const DefaultReadTimeout = time.Minute

// Config configures a Server. Zero values mean the documented defaults.
type Config struct {
	// Mode is replay (the zero value), record or auto: the mode of every
	// request, and the default of sessions (PUT /_llmproxy/session).
	Mode Mode
	// Cassette serves every request that no session serves. At most one of
	// Cassette and CassetteDir is set; with neither, only sessions serve.
	Cassette *cassette.Cassette
	// CassetteDir holds one cassette per test: the request header
	// X-Llmproxy-Cassette: NAME picks DIR/NAME.cassette, opened on first use
	// and shared by every request that names it.
	CassetteDir string
	// LockTimeout bounds the wait for another writer's lock on a cassette a
	// session opens; zero means store.DefaultLockTimeout. Past it the
	// session is refused (409).
	LockTimeout time.Duration
	// MaxOpenCassettes bounds the cassettes of CassetteDir kept open; zero
	// means DefaultMaxOpenCassettes.
	MaxOpenCassettes int
	// Upstreams are the named upstreams; nil means DefaultUpstreams.
	Upstreams map[string]*url.URL
	// MCP are the MCP servers speaking streamable HTTP, by name: the route
	// /mcp/NAME is forwarded to MCP[NAME], the server's endpoint URL (see
	// MCPPrefix). Replay needs none.
	MCP map[string]*url.URL
	// MCPMocks serve the route /mcp/NAME in ModeMock, by name (package
	// mcpmock's handlers).
	MCPMocks map[string]http.Handler
	// Default receives unprefixed paths; nil means Upstreams["openai"].
	Default *url.URL
	// Indexer gives requests and recordings their match keys; nil means
	// cassette.NewIndexer with no rules and Redactor. With the default
	// upstream openai's, the server uses its DefaultRoute.
	Indexer *cassette.Indexer
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
	// MaxResponse bounds a recorded response, counted decoded; zero means
	// DefaultMaxResponse. Past it the client's response is cut as a broken
	// upstream's would be and nothing is recorded.
	MaxResponse int64
	// MaxBodyTotal bounds the request bodies held at once by all requests
	// in flight; zero means four times MaxBody. A request whose body would
	// go past it is answered 503 with Retry-After at once.
	MaxBodyTotal int64
	// MaxRecordingTotal bounds the bytes of the responses being recorded
	// at once, from their first byte until their interaction is written;
	// zero means 2 × MaxResponse. A response that would pass it is cut as
	// one past MaxResponse is, and nothing of it recorded.
	MaxRecordingTotal int64
	// Sync makes a recorded response end only once its interaction is
	// stored: its last byte (or a chunked body's end) waits for the write,
	// and the interaction is written as soon as its response completed,
	// not behind earlier requests still under way. A kill -9 then loses no
	// interaction whose response a client received whole.
	Sync bool
	// ReadTimeout bounds the reading of a request body, from the end of
	// its headers; zero means DefaultReadTimeout. Past it the client gets
	// 408 and its connection is closed. The response is not bounded: a
	// long stream is never cut for taking long.
	ReadTimeout time.Duration
	// UpstreamTimeout bounds the wait for response headers and each later
	// read from the upstream; zero means 10 minutes.
	UpstreamTimeout time.Duration
	// Transport sends upstream requests; nil means a clone of
	// http.DefaultTransport without environment proxies.
	Transport http.RoundTripper
	// AllowOrigins lists the browser origins (scheme://host[:port], or "*"
	// for any) allowed beside the loopback ones; a request with any other
	// Origin header is refused with 403 on every route.
	AllowOrigins []string
	// AdminToken, when set, is required on every /_llmproxy/ request:
	// Authorization: Bearer TOKEN, or the cookie the web view's login form
	// sets.
	AdminToken string
	// Logger receives a line per request: at Debug for an answer served
	// from a recording or a scenario, at Info for a recording written, at
	// Warn for a miss or a refusal, at Error for a failed write; nil
	// discards. Attributes are built only for lines its handler takes.
	Logger *slog.Logger
	// Version is written into new cassettes' metadata.
	Version string
	// Overwrite starts each cassette of CassetteDir afresh in record mode
	// (see cassette.Options.Overwrite). A Config.Cassette is opened by the
	// caller, with its own options.
	Overwrite bool
	// LogLimit bounds the entries kept for GET /_llmproxy/log; zero means 10000.
	LogLimit int
	// LogBytes bounds the bytes those entries hold, their summaries
	// included; zero means 32 MiB. Past either bound the oldest entries
	// are dropped.
	LogBytes int
	// OnMiss, when set, is called with the message of every miss in replay
	// and mock (proxytest fails the test with it): every request answered
	// from no recording or step, including, in mock, one it refused (a path
	// no wire knows, a body that does not parse). It may be called
	// concurrently.
	OnMiss func(msg string)
	// OnFailure, when set, is called in record and auto with a message
	// (naming the cassette, the request, the upstream and why) for every
	// request forwarded upstream that left nothing recorded because the
	// upstream failed: no response (refused, reset, DNS, TLS, silent past
	// UpstreamTimeout: the 502 or 504 the proxy answers), or a response
	// that broke, went silent, ended mid-event, did not decode or went past
	// MaxResponse; or because its cassette write failed. A status the
	// upstream sent and that was recorded (a provider's own 500 or 529) is
	// no failure, nor is a client that left. It may be called concurrently.
	OnFailure func(msg string)
	// Scenarios serve every request in ModeMock, by scenario name (the
	// X-Llmproxy-Scenario header picks one when there are several). Mock
	// mode takes no cassette.
	Scenarios map[string]*scenario.Engine
	// ToolNames names the preset calls of scenarios the API loads
	// (scenario.Scenario.NameTools: mock's --map TOOL=PRESET).
	ToolNames map[string]string
	// ScenarioFiles names, by scenario name, the file each scenario was
	// loaded from, which the web view's scenario page shows; a scenario
	// missing from it (one built in Go) shows none.
	ScenarioFiles map[string]string
	// Faults are injected into the answers replay and auto serve from a
	// cassette and mock from a scenario, on the requests its seed picks
	// (see package faults and FaultHeader); record injects none. The zero
	// Plan injects nothing.
	Faults faults.Plan
	// ReplyCache bounds the bytes replay keeps in memory of the answers it
	// served from read-only cassettes, so that serving one again reads no
	// file (see replyCache); zero means DefaultReplyCache, a negative
	// value keeps none.
	ReplyCache int64
	// AllowHeaderFaults lets a request ask for faults with FaultHeader;
	// without it such a request is refused (400), so that nothing outside
	// can fault a proxy that did not agree to it.
	AllowHeaderFaults bool
}

// Server is an http.Handler that records and replays.
type Server struct {
	cfg       Config
	upstreams map[string]*url.URL
	rules     tapeRules // how requests are served outside a session
	redactor  *cassette.Redactor
	transport http.RoundTripper
	log       *slog.Logger
	handler   http.Handler // the routes behind cleanPaths and browserGuard
	journal   journal
	tapes     *tapeSet
	mock      *mocker // ModeMock only: serves every proxied request
	ui        *view.Handler
	// openaiDefault: the default upstream is the openai one, so an
	// unprefixed path and its /openai/ spelling are one route.
	openaiDefault bool
	bodies        bodyBudget
	recording     bodyBudget  // the bytes of responses being recorded
	cached        cacheBudget // the bytes the tapes' reply caches hold
	scratches     scratches
	watch         *watch // times the bodies being read
	// explaining holds a token per miss being explained (see explainMiss).
	explaining chan struct{}
	// root is the directory session paths lie in (see sessionRoot); "" if
	// it could not be had.
	root     string
	sessions sessions
	// faultCount numbers the requests of each conversation for the
	// faults of Config.Faults and of request headers.
	faultCount faults.Counter
}

// New checks cfg and builds a Server.
func New(cfg Config) (*Server, error) {
	if err := checkSources(cfg); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg}
	if err := s.setUpstreams(); err != nil {
		return nil, err
	}
	if err := s.setMatching(); err != nil {
		return nil, err
	}
	s.setLimits()
	s.watch = newWatch(s.cfg.ReadTimeout)
	var err error
	if s.tapes, err = newTapeSet(s.cfg, &s.cached); err != nil {
		return nil, err
	}
	if cfg.Mode == ModeMock {
		s.mock = newMocker(s.cfg, &s.journal, s.log, s.redactor)
	}
	if s.ui, err = s.newUI(); err != nil {
		return nil, err
	}
	s.root, _ = sessionRoot(s.cfg)
	s.handler = s.cleanPaths(s.browserGuard(s.dispatch(s.routes())))
	return s, nil
}

// setUpstreams fills in and checks the upstream table and the default.
func (s *Server) setUpstreams() error {
	s.upstreams = s.cfg.Upstreams
	if s.upstreams == nil {
		s.upstreams = DefaultUpstreams()
	}
	openai := s.upstreams["openai"]
	s.openaiDefault = s.cfg.Default == nil || (openai != nil && s.cfg.Default.String() == openai.String())
	if s.cfg.Default == nil {
		s.cfg.Default = s.upstreams["openai"]
		if s.cfg.Default == nil {
			s.cfg.Default = DefaultUpstreams()["openai"]
		}
	}
	for name, u := range s.upstreams {
		if err := CheckUpstreamName(name); err != nil {
			return err
		}
		if !isHTTPURL(u) {
			return fmt.Errorf("upstream %s: %v is not an http(s) URL: %w", name, u, ErrConfig)
		}
	}
	if !isHTTPURL(s.cfg.Default) {
		return fmt.Errorf("default upstream: %v is not an http(s) URL: %w", s.cfg.Default, ErrConfig)
	}
	return nil
}

// setMatching fills in the redactor, the indexer (the one the server
// uses, its default route included) and its matcher.
func (s *Server) setMatching() error {
	s.redactor = s.cfg.Redactor
	if s.redactor == nil {
		r, err := cassette.NewRedactor(nil, nil)
		if err != nil {
			return err
		}
		s.redactor = r
	}
	if s.cfg.Indexer == nil {
		x, err := cassette.NewIndexer(match.Rules{}, s.redactor)
		if err != nil {
			return err
		}
		s.cfg.Indexer = x
	}
	if s.openaiDefault {
		s.cfg.Indexer = s.cfg.Indexer.DefaultRoute()
	}
	s.rules = tapeRules{mode: s.cfg.Mode, exhausted: s.cfg.OnExhausted, matcher: s.cfg.Indexer.Matcher()}
	return nil
}

// setLimits fills in the bounds, the transport, the logger and the journal.
func (s *Server) setLimits() {
	if s.cfg.MaxBody <= 0 {
		s.cfg.MaxBody = DefaultMaxBody
	}
	if s.cfg.MaxResponse <= 0 {
		s.cfg.MaxResponse = DefaultMaxResponse
	}
	if s.cfg.MaxBodyTotal <= 0 {
		s.cfg.MaxBodyTotal = 4 * s.cfg.MaxBody
	}
	s.bodies.limit = s.cfg.MaxBodyTotal
	if s.cfg.MaxRecordingTotal <= 0 {
		s.cfg.MaxRecordingTotal = 2 * s.cfg.MaxResponse
	}
	s.recording.limit = s.cfg.MaxRecordingTotal
	if s.cfg.ReplyCache == 0 {
		s.cfg.ReplyCache = DefaultReplyCache
	}
	s.cached.limit = max(s.cfg.ReplyCache, 0)
	if s.cfg.ReadTimeout <= 0 {
		s.cfg.ReadTimeout = DefaultReadTimeout
	}
	if s.cfg.UpstreamTimeout <= 0 {
		s.cfg.UpstreamTimeout = 10 * time.Minute
	}
	s.transport = s.cfg.Transport
	if s.transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		t.ResponseHeaderTimeout = s.cfg.UpstreamTimeout
		s.transport = t
	}
	s.log = s.cfg.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.explaining = make(chan struct{}, maxExplaining)
	s.journal.limit, s.journal.maxBytes = s.cfg.LogLimit, s.cfg.LogBytes
	if s.journal.limit <= 0 {
		s.journal.limit = 10000
	}
}

// Mode is the server's mode.
func (s *Server) Mode() Mode { return s.cfg.Mode }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Close writes every recorded interaction whose response has ended (they
// are written behind the responses, see writeBehind), then closes the
// cassettes the server opened from CassetteDir and for the open session. A Config.Cassette belongs
// to the caller and stays open: close it after Close. Call Close once the
// HTTP server has stopped; a response that ends later is not recorded.
func (s *Server) Close() error {
	s.watch.stop()
	return errors.Join(s.closeSession(), s.tapes.close())
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
	api.HandleFunc("/log", s.handleLog).Methods(http.MethodGet)
	api.HandleFunc("/session", s.handleGetSession).Methods(http.MethodGet)
	api.HandleFunc("/session", mutating(s.handlePutSession)).Methods(http.MethodPut)
	api.HandleFunc("/session", mutating(s.handleDeleteSession)).Methods(http.MethodDelete)
	api.HandleFunc("/scenarios", mutating(s.handlePostScenarios)).Methods(http.MethodPost)
	api.HandleFunc("/scenarios", mutating(s.handleDeleteScenarios)).Methods(http.MethodDelete)
	api.HandleFunc("/verify", s.handleVerify).Methods(http.MethodGet)
	if s.mock != nil {
		api.HandleFunc("/interactions", s.mock.handleInteractions).Methods(http.MethodGet)
		api.HandleFunc("/unused", s.mock.handleUnused).Methods(http.MethodGet)
		api.HandleFunc("/fixtures/{call_id}", s.mock.handleFixture).Methods(http.MethodGet)
	} else {
		api.HandleFunc("/interactions", s.handleInteractions).Methods(http.MethodGet)
		api.HandleFunc("/unused", s.handleUnused).Methods(http.MethodGet)
		api.HandleFunc("/fixtures/{call_id}", s.handleFixture).Methods(http.MethodGet)
	}
	// gorilla/mux runs no middleware for these: the token guards them too.
	api.NotFoundHandler = s.adminAuth(http.HandlerFunc(s.handleAPINotFound))
	api.MethodNotAllowedHandler = s.adminAuth(http.HandlerFunc(s.handleAPINotFound))
	r.Path("/_llmproxy").Handler(s.adminAuth(http.HandlerFunc(s.handleAPINotFound)))
	return r
}

// dispatch hands a request under the reserved prefix (its escaped path,
// as the router matches it) to the router of the proxy's own routes, and
// every other request straight to handleProxy: routing a replayed request
// through the router cost it a tenth of its allocations (the route match,
// and the route and its values added to the request's context).
func (s *Server) dispatch(routes http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.EscapedPath(); strings.HasPrefix(p, "/") && !isReserved(p) {
			s.handleProxy(w, r)
			return
		}
		routes.ServeHTTP(w, r)
	})
}

// Indexer is the indexer the server matches and records with (Config.Indexer,
// as the default route makes it): what a cassette it served is rewritten
// with, so that its index agrees with the server's rules.
func (s *Server) Indexer() *cassette.Indexer { return s.cfg.Indexer }
