package scenario_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/scenario"
	"github.com/llmproxy/llmproxy/wire"
)

// paths are the upstream paths a request of each kind is sent to.
var paths = map[wire.Kind]string{
	wire.KindOpenAIChat:        "/v1/chat/completions",
	wire.KindOpenAIResponses:   "/v1/responses",
	wire.KindAnthropicMessages: "/v1/messages",
	wire.KindGemini:            "/v1beta/models/gemini-2.0-flash:generateContent",
	wire.KindOllama:            "/api/chat",
}

// request parses a body of the given kind into an engine request.
func request(t testing.TB, conv string, kind wire.Kind, body string) scenario.Request {
	t.Helper()
	parsed, err := wire.ParseRequest(kind, paths[kind], []byte(body))
	if err != nil {
		t.Fatalf("parse %s request: %v", kind, err)
	}
	return scenario.Request{Conversation: conv, Parsed: parsed, Body: []byte(body)}
}

// chat is an OpenAI chat request body with the given messages.
func chat(messages ...string) string {
	return `{"model":"gpt-4o-mini","messages":[` + strings.Join(messages, ",") + `]}`
}

func user(text string) string { return `{"role":"user","content":` + quoteJSON(text) + `}` }

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// mustEngine builds an engine or fails the test.
func mustEngine(t testing.TB, s *scenario.Scenario, err error) *scenario.Engine {
	t.Helper()
	if err != nil {
		t.Fatalf("scenario: %v", err)
	}
	e, err := scenario.NewEngine(s)
	if err != nil {
		t.Fatalf("engine: %v", err)
	}
	return e
}

// answer asks the engine and commits the answer, returning it.
func answer(t testing.TB, e *scenario.Engine, req scenario.Request) scenario.Delivery {
	t.Helper()
	p, err := e.Answer(req)
	if err != nil {
		t.Fatalf("answer: %v", err)
	}
	p.Commit()
	return p.Delivery
}

// miss asks the engine and expects a miss, returning it.
func miss(t testing.TB, e *scenario.Engine, req scenario.Request) *scenario.Miss {
	t.Helper()
	p, err := e.Answer(req)
	if err == nil {
		t.Fatalf("answered by step %q, want a miss", p.Step)
	}
	var m *scenario.Miss
	if !errors.As(err, &m) || !errors.Is(err, scenario.ErrMiss) {
		t.Fatalf("error %v is not a *Miss wrapping ErrMiss", err)
	}
	return m
}

// parisFixture is the weather fixture of the weather round, with the
// default call id.
func parisFixture(t testing.TB, opts ...presets.FixtureOption) presets.Fixture {
	t.Helper()
	f, err := presets.Weather.Success(
		presets.WeatherArgs{Location: "Paris", Unit: presets.Celsius},
		presets.WeatherResult{Location: "Paris", Temperature: 21, Unit: presets.Celsius, Condition: "sunny"},
		opts...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// build builds the scenario and its engine, or fails the test.
func build(t testing.TB, b *scenario.Builder) *scenario.Engine {
	t.Helper()
	s, err := b.Build()
	return mustEngine(t, s, err)
}
