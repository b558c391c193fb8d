package proxytest

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/scenario"
)

// Mock is a running llmproxy mock serving one scenario: it answers every
// request from the script, on every provider's wire, with no provider and
// no key. The options Pace (proxy.PaceInstant, the default, or
// proxy.PaceScripted), AllowUnused and Configure apply; the others concern
// cassettes and are ignored.
type Mock struct {
	name        string
	srv         *proxy.Server
	http        *httptest.Server
	allowUnused bool

	mu     sync.Mutex
	misses []string

	closeOnce sync.Once
	closeErr  error
}

// NewScenario serves the scenario file at path (YAML or JSON) for the rest
// of the test. Each test (or parallel subtest sharing the Mock) has its own
// conversation with no header and no change to the application's client:
// the mock reads a conversation's position from the history each request
// carries (docs/scenarios.md, "Where a request stands"), so conversations
// that say different things never meet each other's steps. Only tests that
// send byte-identical requests needing different answers must name their
// conversation with the proxy.ConversationHeader header. A file that does not load fails the test at once with every
// problem, FILE:LINE: message. A request no step answers fails the test
// with the engine's explanation (each candidate step and its first
// condition that failed), and the client sees HTTP 400 of type
// scenario_miss; steps no conversation reached fail it when it ends, unless
// AllowUnused or the test failed already.
func NewScenario(t testing.TB, path string, opts ...Option) *Mock {
	t.Helper()
	s, err := scenario.Load(path)
	if err != nil {
		t.Fatalf("proxytest: %v", err)
	}
	return serveScenario(t, s, path, opts)
}

// ServeScenario is NewScenario for a scenario built in Go (scenario.New
// ... Build).
func ServeScenario(t testing.TB, s *scenario.Scenario, opts ...Option) *Mock {
	t.Helper()
	return serveScenario(t, s, "", opts)
}

// serveScenario serves s, loaded from file ("" for none), for the rest of
// the test.
func serveScenario(t testing.TB, s *scenario.Scenario, file string, opts []Option) *Mock {
	t.Helper()
	m, err := startMock(s, file, func(msg string) { t.Errorf("proxytest: %s", msg) }, opts)
	if err != nil {
		t.Fatalf("proxytest: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			m.allowUnused = true
		}
		if err := m.Close(); err != nil {
			t.Errorf("proxytest: %v", err)
		}
	})
	return m
}

// StartScenario is ServeScenario for code that has no testing.TB: the
// caller must call Close, which reports unreached steps as an error, and
// read misses from Misses.
func StartScenario(s *scenario.Scenario, opts ...Option) (*Mock, error) {
	return startMock(s, "", nil, opts)
}

func startMock(s *scenario.Scenario, file string, onMiss func(string), opts []Option) (*Mock, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	eng, err := scenario.NewEngine(s)
	if err != nil {
		return nil, err
	}
	m := &Mock{name: eng.Name(), allowUnused: o.allowUnused}
	cfg := proxy.Config{
		Mode: proxy.ModeMock, Scenarios: map[string]*scenario.Engine{eng.Name(): eng}, Pace: o.pace, Version: "proxytest",
		OnMiss: func(msg string) {
			m.mu.Lock()
			m.misses = append(m.misses, msg)
			m.mu.Unlock()
			if onMiss != nil {
				onMiss(msg)
			}
		},
	}
	if file != "" {
		cfg.ScenarioFiles = map[string]string{eng.Name(): file}
	}
	for _, f := range o.configure {
		f(&cfg)
	}
	if m.srv, err = proxy.New(cfg); err != nil {
		return nil, err
	}
	m.http = httptest.NewServer(m.srv)
	return m, nil
}

// BaseURL is the mock's own URL, "http://127.0.0.1:PORT"; an
// OpenAI-compatible client wants BaseURL()+"/v1".
func (m *Mock) BaseURL() string { return m.http.URL }

// URL is the base URL of a provider's route, "http://127.0.0.1:PORT/NAME"
// for openai, anthropic, gemini or ollama.
func (m *Mock) URL(provider string) string { return m.http.URL + "/" + provider }

// Misses returns the miss messages so far, in order.
func (m *Mock) Misses() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.misses...)
}

// Log returns what the mock served so far, each answer with its scenario,
// conversation and step, the tool calls it made and the tool results its
// request sent.
func (m *Mock) Log() ([]proxy.LogEntry, error) { return m.srv.Log(context.Background()) }

// Unused lists the ids of the steps no conversation reached so far.
func (m *Mock) Unused() []string { return m.srv.UnusedSteps()[m.name] }

// Close stops the mock once its requests in flight have ended; it returns
// an error listing the steps never reached, unless AllowUnused.
// ServeScenario and NewScenario call it when the test ends.
func (m *Mock) Close() error {
	m.closeOnce.Do(func() {
		m.http.Close()
		var errs []error
		if u := m.Unused(); len(u) > 0 && !m.allowUnused {
			errs = append(errs, fmt.Errorf("scenario %s: %d step(s) no conversation reached: %s (the code made fewer calls than the script expects; proxytest.AllowUnused() accepts that)",
				m.name, len(u), strings.Join(u, ", ")))
		}
		errs = append(errs, m.srv.Close())
		m.closeErr = errors.Join(errs...)
	})
	return m.closeErr
}
