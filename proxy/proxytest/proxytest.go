// Package proxytest runs llmproxy inside a Go test, the way net/http/httptest
// runs an HTTP server: New starts a proxy on a free loopback port over one
// cassette file and stops it when the test ends.
//
//	func TestAgent(t *testing.T) {
//		p := proxytest.New(t, "testdata/agent.cassette")
//		client := openai.NewClient(option.WithBaseURL(p.URL("openai") + "/v1/"))
//		runAgent(t, client) // replays what was recorded; no network, no key
//	}
//
// # Modes
//
// The mode is the Mode option if given, else the environment variable
// LLMPROXY_MODE ("replay", "record" or "auto"), else replay, so that CI never
// records by accident. Record the cassette once with
//
//	LLMPROXY_MODE=record go test -run TestAgent ./...
//
// In record mode every request goes to the real upstream (the built-in ones
// of proxy.DefaultUpstreams, or those given with Upstream) and the
// cassette is written to a temporary file beside its path, which replaces the
// cassette only when the test passed: a failing recording never overwrites a
// good one. Auto mode replays what matches and records the rest into the
// cassette in place. Replay never opens a connection to any upstream.
//
// # Failures
//
// In replay mode, a request with no recording fails the test with the
// proxy's explanation (the closest recorded interaction and the first JSON
// paths where the request differs); the client sees it as an HTTP 400 in its
// provider's error shape, which the official SDKs do not retry. In replay and
// auto mode, a recorded interaction never served by the end of the test fails
// it too (unless AllowUnused): the code under test made fewer calls than when
// it was recorded.
//
// # Scenarios
//
// NewScenario (a scenario file) and ServeScenario (a *scenario.Scenario
// built in Go) serve a script instead of a cassette, as llmproxy mock does:
// no recording, no provider, no key. A request no step answers fails the
// test with the step and condition that failed; a step no conversation
// reached fails it when it ends, unless AllowUnused.
package proxytest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/match"
	"github.com/llmproxy/llmproxy/proxy"
)

// ModeEnv is the environment variable that sets the mode when no Mode
// option is given.
const ModeEnv = "LLMPROXY_MODE"

// An Option changes how New and Start set up the proxy.
type Option func(*options)

type options struct {
	mode        *proxy.Mode
	upstreams   map[string]string
	defaultURL  string
	rules       []match.Rules
	rulesFiles  []string
	exhausted   proxy.Exhausted
	pace        proxy.Pace
	latency     time.Duration
	allowUnused bool
	configure   []func(*proxy.Config)
}

// Mode sets the mode, overriding LLMPROXY_MODE.
func Mode(m proxy.Mode) Option { return func(o *options) { o.mode = &m } }

// Upstream points the upstream name at rawURL, adding the name if it is not
// a built-in one (see proxy.DefaultUpstreams). The name "" sets the default
// upstream, which receives unprefixed paths (BaseURL); it defaults to the
// openai one. Upstreams matter in record and auto mode only.
func Upstream(name, rawURL string) Option {
	return func(o *options) {
		if name == "" {
			o.defaultURL = rawURL
			return
		}
		if o.upstreams == nil {
			o.upstreams = map[string]string{}
		}
		o.upstreams[name] = rawURL
	}
}

// Rules adds match rules: body paths to ignore, for every API kind or for
// one, query parameters to ignore, and headers that must match.
func Rules(r match.Rules) Option { return func(o *options) { o.rules = append(o.rules, r) } }

// RulesFile adds the match rules of a JSON rules file, as llmproxy's --rules
// flag reads it (see match.LoadRules).
func RulesFile(path string) Option {
	return func(o *options) { o.rulesFiles = append(o.rulesFiles, path) }
}

// Ignore leaves gjson body paths out of matching, for every API kind.
func Ignore(paths ...string) Option { return Rules(match.Rules{Ignore: paths}) }

// OnExhausted sets what replay does when a request's recordings are all
// used: reject (the default, a miss), repeat-last or restart.
func OnExhausted(e proxy.Exhausted) Option { return func(o *options) { o.exhausted = e } }

// Pace sets how replayed streams are timed: instant (the default) or as
// recorded.
func Pace(p proxy.Pace) Option { return func(o *options) { o.pace = p } }

// Latency adds a fixed delay before the first byte of every replayed
// response.
func Latency(d time.Duration) Option { return func(o *options) { o.latency = d } }

// AllowUnused keeps recorded interactions that were never served from
// failing the test (or Close).
func AllowUnused() Option { return func(o *options) { o.allowUnused = true } }

// Configure edits the proxy.Config after every other option, for what no
// option covers.
func Configure(f func(*proxy.Config)) Option {
	return func(o *options) { o.configure = append(o.configure, f) }
}

// Proxy is a running llmproxy over one cassette.
type Proxy struct {
	mode        proxy.Mode
	path        string          // the cassette
	draft       *cassette.Draft // in record mode, the new cassette until Close puts it in place
	c           *cassette.Cassette
	srv         *proxy.Server
	http        *httptest.Server
	upstreams   map[string]bool
	allowUnused bool
	fatalf      func(format string, args ...any)

	mu     sync.Mutex
	misses []string

	closeOnce sync.Once
	closeErr  error
}

// New starts a proxy over the cassette at path (relative paths are relative
// to the package directory, as for any test) and stops it when the test
// ends. A setup problem fails the test at once. Misses fail the test as they
// happen; interactions never served fail it when it ends, unless
// AllowUnused or the test failed already. In record mode the cassette is
// replaced only if the test passed.
func New(t testing.TB, path string, opts ...Option) *Proxy {
	t.Helper()
	p, err := start(path, func(msg string) { t.Errorf("proxytest: %s", msg) }, opts)
	if err != nil {
		t.Fatalf("proxytest: %v", err)
	}
	p.fatalf = t.Fatalf
	t.Cleanup(func() {
		if p.mode == proxy.ModeRecord && t.Failed() {
			p.discard()
			t.Logf("proxytest: the test failed, so cassette %s was left as it was", p.path)
			return
		}
		if t.Failed() {
			// A failed test often stopped early: its unused interactions
			// say nothing new.
			p.allowUnused = true
		}
		if err := p.Close(); err != nil {
			t.Errorf("proxytest: %v", err)
		}
	})
	return p
}

// Start is New for code that has no testing.TB, such as an Example: the
// caller must call Close, which reports unused interactions as an error,
// and read misses from Misses. In record mode Close always writes the
// cassette.
func Start(path string, opts ...Option) (*Proxy, error) {
	return start(path, nil, opts)
}

func start(path string, onMiss func(string), opts []Option) (*Proxy, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	mode := proxy.ModeReplay
	switch {
	case o.mode != nil:
		mode = *o.mode
	case os.Getenv(ModeEnv) != "":
		m, err := proxy.ParseMode(os.Getenv(ModeEnv))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ModeEnv, err)
		}
		mode = m
	}
	p := &Proxy{mode: mode, path: path, allowUnused: o.allowUnused, upstreams: map[string]bool{}}
	cfg := proxy.Config{
		Mode: mode, OnExhausted: o.exhausted, Pace: o.pace, Latency: o.latency, Version: "proxytest",
		OnMiss: func(msg string) {
			p.mu.Lock()
			p.misses = append(p.misses, msg)
			p.mu.Unlock()
			if onMiss != nil {
				onMiss(msg)
			}
		},
	}
	var err error
	if cfg.Upstreams, cfg.Default, err = upstreams(o); err != nil {
		return nil, err
	}
	for name := range cfg.Upstreams {
		p.upstreams[name] = true
	}
	if mode == proxy.ModeReplay {
		cfg.Transport = noUpstream{}
	}
	if cfg.Redactor, err = cassette.NewRedactor(nil, nil); err != nil {
		return nil, err
	}
	rules := o.rules
	for _, f := range o.rulesFiles {
		r, err := match.LoadRules(f)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	if cfg.Indexer, err = cassette.NewIndexer(match.MergeRules(rules...), cfg.Redactor); err != nil {
		return nil, err
	}
	if p.c, err = p.open(); err != nil {
		return nil, err
	}
	cfg.Cassette = p.c
	for _, f := range o.configure {
		f(&cfg)
	}
	if p.srv, err = proxy.New(cfg); err != nil {
		p.discard()
		return nil, err
	}
	p.http = httptest.NewServer(p.srv)
	return p, nil
}

// upstreams builds the upstream table from the built-in one and the options.
func upstreams(o options) (map[string]*url.URL, *url.URL, error) {
	ups := proxy.DefaultUpstreams()
	names := make([]string, 0, len(o.upstreams))
	for name := range o.upstreams {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		u, err := proxy.ParseUpstreamURL(o.upstreams[name])
		if err != nil {
			return nil, nil, fmt.Errorf("upstream %s: %w", name, err)
		}
		ups[name] = u
	}
	def := ups["openai"]
	if o.defaultURL != "" {
		u, err := proxy.ParseUpstreamURL(o.defaultURL)
		if err != nil {
			return nil, nil, fmt.Errorf("default upstream: %w", err)
		}
		def = u
	}
	return ups, def, nil
}

// open opens the cassette for the mode: read-only in replay (it must
// exist), a draft beside it in record (cassette.Create: Close puts it in
// place), in place in auto.
func (p *Proxy) open() (*cassette.Cassette, error) {
	switch p.mode {
	case proxy.ModeReplay:
		if _, err := os.Stat(p.path); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("cassette %s does not exist; record it with %s=record go test -run '%s' (or %s=auto to add to it)",
				p.path, ModeEnv, "^TestName$", ModeEnv)
		}
		return cassette.Open(p.path, cassette.Options{ReadOnly: true})
	case proxy.ModeRecord:
		if err := os.MkdirAll(filepath.Dir(p.path), 0o755); err != nil {
			return nil, fmt.Errorf("cassette %s: %w", p.path, err)
		}
		d, err := cassette.Create(p.path, cassette.Options{Version: "proxytest"})
		if err != nil {
			return nil, err
		}
		p.draft = d
		return d.Cassette, nil
	default:
		if err := os.MkdirAll(filepath.Dir(p.path), 0o755); err != nil {
			return nil, fmt.Errorf("cassette %s: %w", p.path, err)
		}
		return cassette.Open(p.path, cassette.Options{Version: "proxytest"})
	}
}

// noUpstream refuses every upstream request; replay never makes one.
type noUpstream struct{}

func (noUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	return nil, fmt.Errorf("proxytest: replay does not contact upstreams (%s %s)", r.Method, r.URL.Redacted())
}

// Mode is the mode the proxy runs in.
func (p *Proxy) Mode() proxy.Mode { return p.mode }

// Cassette is the cassette's path.
func (p *Proxy) Cassette() string { return p.path }

// BaseURL is the proxy's own URL, "http://127.0.0.1:PORT", with no trailing
// slash. Unprefixed paths go to the default upstream, so an OpenAI-compatible
// client wants BaseURL()+"/v1".
func (p *Proxy) BaseURL() string { return p.http.URL }

// URL is the base URL of a named upstream through the proxy,
// "http://127.0.0.1:PORT/NAME": give it to a client in place of the
// provider's origin (OpenAI's clients then want URL("openai")+"/v1/").
// An unknown name fails the test (New) or panics (Start).
func (p *Proxy) URL(upstream string) string {
	if !p.upstreams[upstream] {
		names := make([]string, 0, len(p.upstreams))
		for n := range p.upstreams {
			names = append(names, n)
		}
		sort.Strings(names)
		msg := fmt.Sprintf("proxytest: no upstream named %q (have %s; add one with proxytest.Upstream)", upstream, strings.Join(names, ", "))
		if p.fatalf != nil {
			p.fatalf("%s", msg)
		}
		panic(msg)
	}
	return p.http.URL + "/" + upstream
}

// Misses returns the miss messages so far, in order.
func (p *Proxy) Misses() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.misses...)
}

// Log returns what the proxy served so far, as GET /_llmproxy/log does:
// each request with the interaction that answered it or the reason none
// did, the tool calls in the response and the tool results in the request.
func (p *Proxy) Log() ([]proxy.LogEntry, error) {
	return p.srv.Log(context.Background())
}

// Unused lists the recorded interactions not served so far.
func (p *Proxy) Unused() ([]cassette.Summary, error) {
	all, err := p.srv.AllUnused()
	if err != nil {
		return nil, err
	}
	return all[p.c.Path()], nil
}

// Close stops the proxy once its requests in flight have ended, closes the
// cassette, and in record mode puts the new cassette in place. In replay and
// auto mode it returns an error listing the interactions never served,
// unless AllowUnused. New calls it when the test ends.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.http.Close()
		var errs []error
		if p.mode != proxy.ModeRecord && !p.allowUnused {
			errs = append(errs, p.unusedError())
		}
		errs = append(errs, p.srv.Close())
		if p.draft != nil {
			errs = append(errs, p.draft.Commit())
		} else {
			errs = append(errs, p.c.Close())
		}
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}

// discard stops the proxy and, in record mode, drops what it recorded.
func (p *Proxy) discard() {
	p.closeOnce.Do(func() {
		if p.http != nil {
			p.http.Close()
		}
		if p.srv != nil {
			p.srv.Close()
		}
		if p.draft != nil {
			p.draft.Discard()
		} else {
			p.c.Close()
		}
	})
}

func (p *Proxy) unusedError() error {
	unused, err := p.Unused()
	if err != nil {
		return err
	}
	if len(unused) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cassette %s: %d recorded interaction(s) never served (the code made fewer calls than when it was recorded; proxytest.AllowUnused() accepts that):", p.path, len(unused))
	for _, s := range unused {
		fmt.Fprintf(&b, "\n  interaction %d: %s %s", s.ID, s.Method, cassette.ProxyPath(s.Upstream, s.Path))
		for _, c := range s.ToolCalls {
			fmt.Fprintf(&b, "\n    tool call %s %s(%s)", c.ID, c.Name, c.Arguments)
		}
	}
	return errors.New(b.String())
}
