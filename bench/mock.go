package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
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
// maskAnswerID cuts it (as answerID.ReplaceAll would) and is what the load
// uses: the regexp takes milliseconds over a 200-event stream, which would
// make the load generator the bottleneck.
var answerID = regexp.MustCompile(`(weather|text)-[0-9]+|"obfuscation":"[^"]*"`)

// maskAnswerID appends b to dst with what answerID matches cut out.
func maskAnswerID(dst, b []byte) []byte {
	markers := [...][]byte{[]byte("weather-"), []byte("text-"), []byte(`"obfuscation":"`)}
	var next [len(markers)]int // where each marker is next found at or after i; -1: nowhere
	for k := range next {
		next[k] = -2 // not looked for yet
	}
	for i := 0; i < len(b); {
		first := -1
		for k, m := range markers {
			if next[k] == -2 || next[k] >= 0 && next[k] < i {
				next[k] = -1
				if j := bytes.Index(b[i:], m); j >= 0 {
					next[k] = i + j
				}
			}
			if next[k] >= 0 && (first < 0 || next[k] < next[first]) {
				first = k
			}
		}
		if first < 0 {
			return append(dst, b[i:]...)
		}
		at, end := next[first], next[first]+len(markers[first])
		if first < 2 { // digits, at least one
			for end < len(b) && b[end] >= '0' && b[end] <= '9' {
				end++
			}
			if end == at+len(markers[first]) {
				dst = append(dst, b[i:at+1]...)
				i = at + 1
				continue
			}
		} else {
			q := bytes.IndexByte(b[end:], '"')
			if q < 0 {
				return append(dst, b[i:]...)
			}
			end += q + 1
		}
		dst = append(dst, b[i:at]...)
		i = end
	}
	return dst
}

// textScenario answers the replay cases' question (requestBody(0, …)) with
// the text of their 2 KB answers: the JSON answer's text when it does not
// stream, the stream's in pieces of sseChunk characters when it does (so
// that mock writes as many events as aimock and the replayed stream). Each
// step is an entry step and ends the conversation, which then restarts.
func textScenario() []byte {
	step := func(id string, stream bool, text string) map[string]any {
		respond := map[string]any{"text": text}
		if stream {
			respond["stream"] = map[string]any{"chunk": sseChunk}
		}
		return map[string]any{"id": id, "start": true, "complete": true,
			"when": map[string]any{"latest-user": map[string]any{"contains": userText(0, stream)}}, "respond": respond}
	}
	b, _ := json.Marshal(map[string]any{"version": 1, "name": "text", "model": "gpt-4o-mini", "on-exhausted": "restart",
		"steps": []any{step("plain", false, jsonContent(chatAnswerID)), step("streamed", true, sseContent())}})
	return b
}

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

// newMockHandler is llmproxy mock serving the weather and the text
// scenarios, as the command builds it: scripted pace (the scenarios have
// no delays), no upstream, logging to logger (nil: nowhere). A request
// names its scenario in proxy.ScenarioHeader.
func newMockHandler(logger *slog.Logger) (*proxy.Server, error) {
	engines := map[string]*scenario.Engine{}
	for name, src := range map[string][]byte{"weather.yaml": []byte(weatherScenario), "text.json": textScenario()} {
		s, err := scenario.Parse(name, src)
		if err != nil {
			return nil, err
		}
		e, err := scenario.NewEngine(s)
		if err != nil {
			return nil, err
		}
		engines[e.Name()] = e
	}
	return proxy.New(proxy.Config{Mode: proxy.ModeMock, Pace: proxy.PaceScripted, Scenarios: engines,
		Transport: refuse{}, Logger: logger, Version: "bench"})
}

// mockAnswer is one answer of mock, as written to an in-process recorder.
type mockAnswer struct {
	header http.Header
	body   []byte
}

// playMock sends the round's requests to h in process, in one conversation
// of the named scenario, and returns its answers; an answer other than 200
// is an error.
func playMock(h http.Handler, scenarioName string, round [][]byte) ([]mockAnswer, error) {
	out := make([]mockAnswer, len(round))
	for i, body := range round {
		r := httptest.NewRequest(http.MethodPost, chatPath, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(proxy.ScenarioHeader, scenarioName)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			return nil, fmt.Errorf("scenario %s, request %d: status %d: %s", scenarioName, i+1, w.Code, w.Body)
		}
		b, _ := io.ReadAll(w.Body)
		out[i] = mockAnswer{header: w.Header(), body: b}
	}
	return out, nil
}

// mockCase is one payload of the mock scenario: a scenario's round,
// streamed or not.
type mockCase struct {
	payload, scenario string
	stream            bool
	round             [][]byte
}

// mockCases are the weather round (a scripted tool call, then the answer
// to its result) and the 2 KB text (one question, the replay cases'),
// JSON and SSE.
func mockCases() []mockCase {
	return []mockCase{
		{payloadMockJSON, "weather", false, weatherRound(false)},
		{payloadMockSSE, "weather", true, weatherRound(true)},
		{payloadMockTextJSON, "text", false, [][]byte{requestBody(0, false)}},
		{payloadMockTextSSE, "text", true, [][]byte{requestBody(0, true)}},
	}
}

// mockRounds is mock's answers to each case's round, by payload, each
// played in a fresh handler so that its ids are the first conversation's.
func mockRounds() (map[string][]mockAnswer, error) {
	out := map[string][]mockAnswer{}
	for _, c := range mockCases() {
		h, err := newMockHandler(nil)
		if err != nil {
			return nil, err
		}
		out[c.payload], err = playMock(h, c.scenario, c.round)
		h.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.payload, err)
		}
	}
	return out, nil
}

// mockBare is the bare handler of the mock scenario: it serves the bytes
// mock wrote for each case, with mock's headers, choosing the answer by
// the request alone (the text's question or the weather's, streamed or
// not, tool result or not), doing the least a net/http handler can: the
// headers are copied by their slices, and a body, JSON or the whole
// stream (the scenarios pace nothing, so every event is ready at once),
// is one Write and no flush, so that net/http sends a stream that fits its
// buffers with the chunked body's end in one system call, as mock does.
type mockBare struct {
	rounds [2][2][]mockAnswer // by text or weather, then streamed or not
	bodies *sync.Pool         // request body buffers
}

func newMockBare(rounds map[string][]mockAnswer) mockBare {
	m := mockBare{bodies: &sync.Pool{New: func() any { return new(bytes.Buffer) }}}
	for _, c := range mockCases() {
		m.rounds[b2i(c.scenario == "text")][b2i(c.stream)] = rounds[c.payload]
	}
	return m
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

var (
	toolResult   = []byte(`"tool_call_id"`)
	textQuestion = []byte("Question 0")
)

func (m mockBare) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := m.bodies.Get().(*bytes.Buffer)
	defer m.bodies.Put(body)
	body.Reset()
	if _, err := body.ReadFrom(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	stream := bytes.Contains(body.Bytes(), streamFlag)
	round := m.rounds[b2i(bytes.Contains(body.Bytes(), textQuestion))][b2i(stream)]
	a := round[0]
	if len(round) > 1 && bytes.Contains(body.Bytes(), toolResult) {
		a = round[1]
	}
	a.write(w)
}

// write serves a: its headers, copied by their slices, and its body in one
// Write.
func (a mockAnswer) write(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range a.header {
		h[k] = v
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(a.body)
}

// mockHandlerFor is the handler of a server child of kind mock or
// mock-bare: mock logs to logger, as the command does by default.
func mockHandlerFor(kind string, logger *slog.Logger) (http.Handler, func(), error) {
	if kind == "mock" {
		p, err := newMockHandler(logger)
		if err != nil {
			return nil, nil, err
		}
		return p, func() { p.Close() }, nil
	}
	rounds, err := mockRounds()
	if err != nil {
		return nil, nil, err
	}
	return newMockBare(rounds), func() {}, nil
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
	payloadMockJSON     = "weather round, JSON"
	payloadMockSSE      = "weather round, SSE"
	payloadMockTextJSON = "2 KB text, JSON"
	payloadMockTextSSE  = "2 KB text, SSE (200 events)"
	nameMockBare        = "limit: bare net/http handler serving mock's bytes"
	nameMock            = "llmproxy mock"
)

// mockPayloads are the payloads of the mock scenario, in order.
var mockPayloads = []string{payloadMockJSON, payloadMockSSE, payloadMockTextJSON, payloadMockTextSSE}

// mockLoad is the load of a mock case: each worker plays the case's round
// again and again in a conversation of its own (named by conv), every
// answer checked against answers with the ids masked.
func mockLoad(cs mockCase, answers []mockAnswer, conv func() http.Header) load {
	want := make([][]byte, len(answers))
	for i, a := range answers {
		want[i] = answerID.ReplaceAll(a.body, nil)
	}
	return load{mask: maskAnswerID,
		conversation: func() http.Header {
			h := conv()
			h[proxy.ScenarioHeader] = []string{cs.scenario}
			return h
		},
		body: func(n int) []byte { return cs.round[n%len(cs.round)] },
		want: func(n int) []byte { return want[n%len(want)] }}
}

// mockScenario measures llmproxy mock serving each case across real
// connections against a bare handler serving the bytes mock wrote and
// against aimock (when installed) serving the same answers from its
// fixtures, interleaved round by round as the replay cases are. Each
// worker of each run plays the round again and again in a conversation of
// its own; every answer is checked: mock's byte for byte with the ids
// masked, aimock's byte for byte against its first answers, whose text,
// tool calls and finish reason were checked equal to mock's.
func mockScenario(p plan, dir string, ps peerSet) ([]replayRow, error) {
	var children []*child
	defer func() {
		for _, c := range children {
			c.stop()
		}
	}()
	var servers []server
	kinds := []struct{ kind, name string }{{"mock-bare", nameMockBare}, {"mock", nameMock}}
	if os.Getenv("BENCH_MOCK_FLOOR") != "" { // for bench/findings.md: see mockFloor
		kinds = append(kinds, struct{ kind, name string }{"mock-floor", "floor: body parsed, step chosen, mock's bytes"})
	}
	for _, s := range kinds {
		c, err := startChild(dir, serveOptions{kind: s.kind, cpuprofile: p.profile(s.kind)})
		if err != nil {
			return nil, err
		}
		children = append(children, c)
		servers = append(servers, server{name: s.name, base: c.URL, client: newClient, proc: c, warm: p.warm})
	}
	aimock, notRun := startMockAimock(p, dir, ps)
	if aimock != nil {
		children = append(children, aimock.proc)
	}
	rounds, err := mockRounds()
	if err != nil {
		return nil, err
	}
	// One source of names for the whole scenario: a conversation a run
	// left mid-round is never met again.
	conv := conversations()
	var rows []replayRow
	for _, cs := range mockCases() {
		answers := rounds[cs.payload]
		l := mockLoad(cs, answers, conv)
		l.max = p.maxRequests
		live := servers
		var failed []replayRow
		if aimock != nil {
			s, err := aimockServes(*aimock, l, cs, answers)
			if err != nil {
				failed = append(failed, replayRow{Server: nameAimock, Failed: "answers otherwise: " + err.Error()})
				p.logf("mock: %s: %v", cs.payload, err)
			} else {
				live = append(slices.Clone(servers), s)
			}
		}
		// Every server plays two rounds right before they are timed.
		for _, s := range live {
			check := s.loadFor(l)
			check.conns, check.dur, check.max = 1, time.Hour, 2*len(cs.round)
			t, c := &tally{}, s.client(1)
			check.run(c, s.base, t)
			c.CloseIdleConnections()
			if t.errs > 0 {
				return nil, fmt.Errorf("%s on %s: %d of %d answers wrong or failed, first: %v", cs.payload, s.name, t.errs, check.max, t.err)
			}
		}
		for _, conns := range []int{1, 64} {
			l.conns = conns
			got, err := replayCase(p, live, l, cs.payload, cs.stream, nameMock)
			if err != nil {
				return nil, err
			}
			rows = append(rows, got...)
			for _, r := range slices.Concat(failed, notRun) {
				r.Payload, r.Conns = cs.payload, conns
				rows = append(rows, r)
			}
		}
	}
	return rows, nil
}
