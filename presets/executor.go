package presets

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/llmproxy/llmproxy/cassette"
)

// Executor answers an application's tool calls with the fixtures of a
// scrubbed cassette, so that a test can run the application with fixtures in
// place of its real tools — no file written, no command run — and still send
// the tool results the cassette recorded:
//
//	exec, err := presets.NewCassetteExecutor("testdata/agent.cassette")
//	…
//	result, err := exec.Execute(ctx, presets.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
//	// send result.Content, as it is, as the tool's output
//
// A fixture is found by the call's id alone: in replay the call ids are the
// ones scrub gave (call_weather, …), so the application only passes on the
// id the model sent. The result's Content is the fixture's canonical JSON;
// an application that sends those bytes as its tool output sends what the
// scrubbed cassette expects.
//
// An Executor is safe for concurrent use.
type Executor struct {
	source string
	fetch  func(ctx context.Context, callID string) ([]byte, error)
}

// ExecutorOption configures NewProxyExecutor.
type ExecutorOption func(*proxyExecutor)

type proxyExecutor struct {
	base     string
	client   *http.Client
	token    string
	cassette string
}

// WithHTTPClient sends the fixture requests with c instead of
// http.DefaultClient.
func WithHTTPClient(c *http.Client) ExecutorOption {
	return func(p *proxyExecutor) { p.client = c }
}

// WithAdminToken sends "Authorization: Bearer token", for a proxy started
// with --admin-token.
func WithAdminToken(token string) ExecutorOption {
	return func(p *proxyExecutor) { p.token = token }
}

// WithCassetteName sends "X-Llmproxy-Cassette: name", for a proxy serving a
// --cassette-dir.
func WithCassetteName(name string) ExecutorOption {
	return func(p *proxyExecutor) { p.cassette = name }
}

// NewProxyExecutor returns an Executor that fetches each fixture from a
// running llmproxy: GET {baseURL}/_llmproxy/fixtures/{call_id}. baseURL is
// the proxy's root ("http://127.0.0.1:7878"), not an API base under it.
func NewProxyExecutor(baseURL string, opts ...ExecutorOption) (*Executor, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("presets: executor: proxy URL %q is not an http(s) URL", baseURL)
	}
	p := &proxyExecutor{base: strings.TrimSuffix(baseURL, "/"), client: http.DefaultClient}
	for _, o := range opts {
		o(p)
	}
	return &Executor{source: "proxy " + p.base, fetch: p.get}, nil
}

func (p *proxyExecutor) get(ctx context.Context, callID string) ([]byte, error) {
	u := p.base + "/_llmproxy/fixtures/" + url.PathEscape(callID)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	if p.cassette != "" {
		req.Header.Set("X-Llmproxy-Cassette", p.cassette)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("GET %s: %w", u, ErrNoFixture)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: %s: %s", u, resp.Status, shorten(strings.TrimSpace(string(body)), 200))
	}
	return body, nil
}

// NewCassetteExecutor returns an Executor that answers from the fixtures of
// the cassette file at path, read once, now: the file is opened read-only
// (so a replaying proxy may hold it too) and closed before this returns.
func NewCassetteExecutor(path string) (*Executor, error) {
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("presets: executor: %w", err)
	}
	raw, err := c.Fixtures()
	c.Close()
	if err != nil {
		return nil, fmt.Errorf("presets: executor: %w", err)
	}
	content := make(map[string][]byte, len(raw))
	for id, v := range raw {
		f, err := ParseCassetteFixture(id, v)
		if err != nil {
			return nil, fmt.Errorf("presets: executor: cassette %s: %w", path, err)
		}
		content[id] = f.Result.Content
	}
	return &Executor{source: "cassette " + path, fetch: func(_ context.Context, callID string) ([]byte, error) {
		b, ok := content[callID]
		if !ok {
			return nil, ErrNoFixture
		}
		return b, nil
	}}, nil
}

// Execute returns the fixture result of call: Content is the result JSON as
// the cassette recorded it, IsError set when it is the error envelope. A
// call without a fixture is an error wrapping ErrNoFixture that names the
// call; so is a fixture that cannot be fetched or is not JSON.
func (e *Executor) Execute(ctx context.Context, call ToolCall) (ToolResult, error) {
	if call.ID == "" {
		return ToolResult{}, fmt.Errorf("presets: executor: %s call without an id: %w", call.Name, ErrNoFixture)
	}
	content, err := e.fetch(ctx, call.ID)
	if err != nil {
		return ToolResult{}, fmt.Errorf("presets: executor: %s: %s call %s: %w", e.source, call.Name, call.ID, err)
	}
	canon, err := Canonical(content)
	if err != nil {
		return ToolResult{}, fmt.Errorf("presets: executor: %s: %s call %s: fixture: %w", e.source, call.Name, call.ID, err)
	}
	return ToolResult{CallID: call.ID, Name: call.Name, Content: canon, IsError: isEnvelope(canon)}, nil
}

// isEnvelope reports whether a result is the shared error envelope.
func isEnvelope(content []byte) bool {
	return Calculator.ValidateError(content) == nil
}
