package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/scenario"
)

// weatherPrompt is what the provider loops ask.
const weatherPrompt = "What's the weather in Paris?"

// weatherScenario is the weather round: ask, the weather(Paris) call from
// a fixture whose result is weatherResult, then the answer once that result
// comes back.
const weatherScenario = `version: 1
name: weather
fixtures:
  paris:
    preset: weather
    id: call_paris
    arguments: {location: Paris, unit: celsius}
    result: {location: Paris, temperature: 21, unit: celsius, condition: sunny}
steps:
  - id: ask
    when: {latest-user: {equals: "What's the weather in Paris?"}}
    respond: {tool-calls: [{fixture: paris}]}
  - id: answer
    when: {tool-result: {fixture: paris}}
    respond: {text: "Paris is sunny, 21 °C."}
    complete: true
`

// mockServer serves scenarios (YAML texts) in mock mode.
type mockServer struct {
	t   testing.TB
	p   *proxy.Server
	srv *httptest.Server
}

func startMock(t testing.TB, scenarios []string, edit ...func(*proxy.Config)) *mockServer {
	t.Helper()
	engines := map[string]*scenario.Engine{}
	for n, text := range scenarios {
		s, err := scenario.Parse("scenario"+string(rune('a'+n))+".yaml", []byte(text))
		if err != nil {
			t.Fatalf("scenario: %v", err)
		}
		e, err := scenario.NewEngine(s)
		if err != nil {
			t.Fatalf("engine: %v", err)
		}
		engines[e.Name()] = e
	}
	cfg := proxy.Config{Mode: proxy.ModeMock, Scenarios: engines}
	for _, e := range edit {
		e(&cfg)
	}
	p, err := proxy.New(cfg)
	if err != nil {
		t.Fatalf("proxy.New: %v", err)
	}
	m := &mockServer{t: t, p: p, srv: httptest.NewServer(p)}
	t.Cleanup(func() {
		m.srv.Close()
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return m
}

// client returns an HTTP client whose requests belong to conversation conv.
func (m *mockServer) client(conv string) *http.Client {
	return &http.Client{Transport: headers{next: http.DefaultTransport, set: map[string]string{proxy.ConversationHeader: conv}}}
}

// headers is a transport that sets request headers.
type headers struct {
	next http.RoundTripper
	set  map[string]string
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.set {
		r.Header.Set(k, v)
	}
	return h.next.RoundTrip(r)
}

// log returns the mock's log entries.
func (m *mockServer) log() []proxy.LogEntry {
	m.t.Helper()
	entries, err := m.p.Log(context.Background())
	if err != nil {
		m.t.Fatal(err)
	}
	return entries
}

// getJSON fetches an API path and decodes its JSON into v; it returns the status.
func (m *mockServer) getJSON(path string, v any) int {
	m.t.Helper()
	resp, err := http.Get(m.srv.URL + path)
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		m.t.Fatal(err)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			m.t.Fatalf("GET %s: %v in %s", path, err, b)
		}
	}
	return resp.StatusCode
}

// TestMockWeatherRoundThroughSDKs runs the weather round through every
// official SDK (raw HTTP for Ollama), streamed and not, each in its own
// conversation, and checks what the application saw and what the log says.
func TestMockWeatherRoundThroughSDKs(t *testing.T) {
	m := startMock(t, []string{weatherScenario})
	const wantCall = `call_paris weather{"location":"Paris","unit":"celsius"}`
	const wantAnswer = "Paris is sunny, 21 °C."
	loops := []struct {
		name     string
		run      func(ctx context.Context, hc *http.Client, stream bool) (transcript, error)
		wantCall string
	}{
		{"openai-go chat", func(ctx context.Context, hc *http.Client, stream bool) (transcript, error) {
			return openaiGoLoop(ctx, hc, m.srv.URL, weatherPrompt, stream)
		}, wantCall},
		{"go-openai", func(ctx context.Context, hc *http.Client, stream bool) (transcript, error) {
			tr, err := goOpenAILoop(ctx, hc, m.srv.URL, weatherPrompt, stream)
			for n := range tr.calls {
				id, rest, _ := strings.Cut(tr.calls[n], " ")
				name, args, _ := strings.Cut(rest, "{")
				tr.calls[n] = id + " " + name + sortedArgs("{"+args)
			}
			return tr, err
		}, wantCall},
		{"openai-go responses", envLoop(m, responsesLoop), wantCall},
		{"anthropic-sdk-go", envLoop(m, anthropicLoop), wantCall},
		{"genai", envLoop(m, geminiLoop), wantCall},
		{"ollama", envLoop(m, ollamaLoop), wantCall},
	}
	for _, l := range loops {
		for _, stream := range []bool{false, true} {
			name := l.name
			if stream {
				name += " stream"
			}
			t.Run(name, func(t *testing.T) {
				tr, err := l.run(context.Background(), m.client(name), stream)
				if err != nil {
					t.Fatalf("%v (so far %v)", err, tr)
				}
				if len(tr.calls) != 1 || tr.calls[0] != l.wantCall || tr.answer != wantAnswer {
					t.Errorf("saw %v, want calls=[%s] answer=%q", tr, l.wantCall, wantAnswer)
				}
				var steps []string
				for _, e := range m.log() {
					if e.Conversation == name {
						steps = append(steps, e.Scenario+"/"+e.Step)
					}
				}
				if strings.Join(steps, " ") != "weather/ask weather/answer" {
					t.Errorf("log of conversation %q: %v, want weather/ask weather/answer", name, steps)
				}
			})
		}
	}
}

// envLoop adapts a providerLoop to the mock.
func envLoop(m *mockServer, loop providerLoop) func(context.Context, *http.Client, bool) (transcript, error) {
	return func(ctx context.Context, hc *http.Client, stream bool) (transcript, error) {
		tr, err := loop(ctx, clientEnv{hc: hc, base: m.srv.URL, creds: replayCreds}, weatherPrompt, stream)
		if err == nil {
			// Gemini carries no call id: the scenario's shows nowhere.
			for n, c := range tr.calls {
				if strings.HasPrefix(c, " ") {
					tr.calls[n] = "call_paris" + c
				}
			}
		}
		return tr, err
	}
}

// parallelScenario calls weather twice in one answer.
const parallelScenario = `version: 1
name: twice
fixtures:
  paris:
    preset: weather
    id: call_paris
    arguments: {location: Paris, unit: celsius}
    result: {location: Paris, temperature: 21, unit: celsius, condition: sunny}
steps:
  - id: ask
    respond:
      tool-calls:
        - {fixture: paris}
        - {function: weather, arguments: {location: London}, id: call_london}
  - id: answer
    respond: {text: "Both looked up."}
    complete: true
`

func TestMockParallelToolCalls(t *testing.T) {
	m := startMock(t, []string{parallelScenario})
	want := `[call_paris weather{"location":"Paris","unit":"celsius"} call_london weather{"location":"London"}]`
	loops := map[string]func(ctx context.Context, hc *http.Client, stream bool) (transcript, error){
		"openai-go chat": func(ctx context.Context, hc *http.Client, stream bool) (transcript, error) {
			return openaiGoLoop(ctx, hc, m.srv.URL, weatherPrompt, stream)
		},
		"openai-go responses": envLoop(m, responsesLoop),
		"anthropic-sdk-go":    envLoop(m, anthropicLoop),
		"ollama":              envLoop(m, ollamaLoop),
	}
	for name, run := range loops {
		for _, stream := range []bool{false, true} {
			conv := fmt.Sprint(name, stream)
			tr, err := run(context.Background(), m.client(conv), stream)
			if err != nil {
				t.Errorf("%s: %v", conv, err)
				continue
			}
			if got := fmt.Sprint(tr.calls); got != want || tr.answer != "Both looked up." {
				t.Errorf("%s: saw %v, want calls %s", conv, tr, want)
			}
		}
	}
}
