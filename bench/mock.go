package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/scenario"
)

// The weather round of the scenario docs, answered by llmproxy mock and by
// a bare handler that serves the very bytes mock wrote: the ratio of the two
// is the engine's and the writers' cost. The scenario restarts after its
// last step, so a conversation plays the round again and again.

const weatherScenario = `version: 1
name: weather
model: gpt-4o-mini
on-exhausted: restart
fixtures:
  paris:
    preset: weather
    id: call_paris
    arguments: {location: Paris, unit: celsius}
    result: {location: Paris, temperature: 21, unit: celsius, condition: sunny}
steps:
  - id: ask
    when: {latest-user: {contains: Paris}}
    respond: {tool-calls: [{fixture: paris}]}
  - id: answer
    when: {tool-result: {fixture: paris}}
    respond: {text: "Paris is sunny, 21 °C."}
    complete: true
`

// answerID is what differs between two answers of mock to the same request:
// response ids count the conversation's answers (chatcmpl-weather-1, -3, …)
// and the stream padding follows the id. Everything else repeats.
var answerID = regexp.MustCompile(`weather-[0-9]+|"obfuscation":"[^"]*"`)

// weatherRound is the two requests of the round, streamed or not.
func weatherRound(stream bool) [][]byte {
	s := strconv.FormatBool(stream)
	ask := `{"model":"gpt-4o-mini","stream":` + s + `,"messages":[{"role":"user","content":"What's the weather in Paris?"}],` +
		`"tools":[{"type":"function","function":{"name":"weather","parameters":{"type":"object"}}}]}`
	answer := `{"model":"gpt-4o-mini","stream":` + s + `,"messages":[{"role":"user","content":"What's the weather in Paris?"},` +
		`{"role":"assistant","tool_calls":[{"id":"call_paris","type":"function","function":{"name":"weather","arguments":"{\"location\":\"Paris\",\"unit\":\"celsius\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_paris","content":"{\"location\":\"Paris\",\"temperature\":21,\"unit\":\"celsius\",\"condition\":\"sunny\"}"}],` +
		`"tools":[{"type":"function","function":{"name":"weather","parameters":{"type":"object"}}}]}`
	return [][]byte{[]byte(ask), []byte(answer)}
}

// newMockHandler is llmproxy mock serving the weather scenario, as the
// command builds it: scripted pace (the scenario has no delays), no
// upstream, logging to logger (nil: nowhere).
func newMockHandler(logger *slog.Logger) (*proxy.Server, error) {
	s, err := scenario.Parse("weather.yaml", []byte(weatherScenario))
	if err != nil {
		return nil, err
	}
	e, err := scenario.NewEngine(s)
	if err != nil {
		return nil, err
	}
	return proxy.New(proxy.Config{Mode: proxy.ModeMock, Pace: proxy.PaceScripted, Scenarios: map[string]*scenario.Engine{"weather": e},
		Transport: refuse{}, Logger: logger, Version: "bench"})
}

// mockAnswer is one answer of mock, as written to an in-process recorder.
type mockAnswer struct {
	header http.Header
	body   []byte
}

// playMock sends the round's requests to h in process, in one conversation,
// and returns its answers; an answer other than 200 is an error.
func playMock(h http.Handler, round [][]byte) ([]mockAnswer, error) {
	out := make([]mockAnswer, len(round))
	for i, body := range round {
		r := httptest.NewRequest(http.MethodPost, chatPath, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			return nil, fmt.Errorf("weather round, request %d: status %d: %s", i+1, w.Code, w.Body)
		}
		b, _ := io.ReadAll(w.Body)
		out[i] = mockAnswer{header: w.Header(), body: b}
	}
	return out, nil
}

// mockRounds is mock's answers to the weather round, JSON and streamed,
// each played in a fresh handler so that its ids are the first
// conversation's.
func mockRounds() (json, sse []mockAnswer, err error) {
	for _, r := range []struct {
		stream bool
		dst    *[]mockAnswer
	}{{false, &json}, {true, &sse}} {
		h, err := newMockHandler(nil)
		if err != nil {
			return nil, nil, err
		}
		*r.dst, err = playMock(h, weatherRound(r.stream))
		h.Close()
		if err != nil {
			return nil, nil, err
		}
	}
	return json, sse, nil
}

// mockBare is the bare handler of the mock scenario: it serves the bytes
// mock wrote for the weather round, with mock's headers, choosing the
// answer by the request alone (streamed or not, tool result or not), doing
// the least a net/http handler can: the headers are copied by their
// slices, and a body, JSON or the whole stream, is one Write, followed by
// one flush for a stream (the scenario paces nothing, so every event is
// ready at once).
type mockBare struct {
	json, sse []mockAnswer
	bodies    *sync.Pool // request body buffers
}

func newMockBare(json, sse []mockAnswer) mockBare {
	return mockBare{json: json, sse: sse, bodies: &sync.Pool{New: func() any { return new(bytes.Buffer) }}}
}

var toolResult = []byte(`"tool_call_id"`)

func (m mockBare) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := m.bodies.Get().(*bytes.Buffer)
	defer m.bodies.Put(body)
	body.Reset()
	if _, err := body.ReadFrom(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	stream := bytes.Contains(body.Bytes(), streamFlag)
	round := m.json
	if stream {
		round = m.sse
	}
	a := round[0]
	if bytes.Contains(body.Bytes(), toolResult) {
		a = round[1]
	}
	h := w.Header()
	for k, v := range a.header {
		h[k] = v
	}
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(a.body); err != nil || !stream {
		return
	}
	_ = http.NewResponseController(w).Flush()
}

// mockHandlerFor is the handler of a server child of kind mock or
// mock-bare: mock logs as the command does by default (text, level info).
func mockHandlerFor(kind string) (http.Handler, func(), error) {
	if kind == "mock" {
		p, err := newMockHandler(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})))
		if err != nil {
			return nil, nil, err
		}
		return p, func() { p.Close() }, nil
	}
	json, sse, err := mockRounds()
	if err != nil {
		return nil, nil, err
	}
	return newMockBare(json, sse), func() {}, nil
}

// conversations names a fresh conversation on each call: a load gives each
// worker of each run its own, so that 64 connections are 64 conversations
// in parallel, each starting the round from its first request. The names
// are unique among one function's calls only.
func conversations() func() http.Header {
	var n atomic.Int64
	return func() http.Header {
		return http.Header{proxy.ConversationHeader: {"bench-" + strconv.FormatInt(n.Add(1), 10)}}
	}
}

// The payloads and servers of the mock scenario.
const (
	payloadMockJSON = "weather round, JSON"
	payloadMockSSE  = "weather round, SSE"
	nameMockBare    = "limit: bare net/http handler serving mock's bytes"
	nameMock        = "llmproxy mock"
)

// mockScenario measures llmproxy mock serving the weather round across
// real connections against a bare handler serving the bytes mock wrote,
// interleaved round by round as the replay cases are. Each worker of each
// run plays the round, ask then answer, again and again in a conversation
// of its own; every answer is checked with the ids masked.
func mockScenario(p plan, dir string) ([]replayRow, error) {
	var children []*child
	defer func() {
		for _, c := range children {
			c.stop()
		}
	}()
	var servers []server
	for _, s := range []struct{ kind, name string }{{"mock-bare", nameMockBare}, {"mock", nameMock}} {
		c, err := startChild(dir, serveOptions{kind: s.kind, cpuprofile: p.profile(s.kind)})
		if err != nil {
			return nil, err
		}
		children = append(children, c)
		servers = append(servers, server{name: s.name, base: c.URL, client: newClient, proc: c, warm: p.warm})
	}
	json, sse, err := mockRounds()
	if err != nil {
		return nil, err
	}
	// One source of names for the whole scenario: a conversation a run
	// left mid-round is never met again.
	conv := conversations()
	var rows []replayRow
	for _, cs := range []struct {
		payload string
		stream  bool
		answers []mockAnswer
	}{
		{payloadMockJSON, false, json},
		{payloadMockSSE, true, sse},
	} {
		round := weatherRound(cs.stream)
		want := make([][]byte, len(cs.answers))
		for i, a := range cs.answers {
			want[i] = answerID.ReplaceAll(a.body, nil)
		}
		l := load{max: p.maxRequests, mask: answerID, conversation: conv,
			body: func(n int) []byte { return round[n%len(round)] },
			want: func(n int) []byte { return want[n%len(want)] }}
		// Both servers play two rounds right before they are timed.
		for _, s := range servers {
			check := l
			check.conns, check.dur, check.max = 1, time.Hour, 2*len(round)
			t, c := &tally{}, s.client(1)
			check.run(c, s.base, t)
			c.CloseIdleConnections()
			if t.errs > 0 {
				return nil, fmt.Errorf("%s on %s: %d of %d answers wrong or failed, first: %v", cs.payload, s.name, t.errs, check.max, t.err)
			}
		}
		for _, conns := range []int{1, 64} {
			l.conns = conns
			got, err := replayCase(p, servers, l, cs.payload, cs.stream, nameMock)
			if err != nil {
				return nil, err
			}
			rows = append(rows, got...)
		}
	}
	return rows, nil
}
