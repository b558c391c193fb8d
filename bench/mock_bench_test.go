package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"

	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/scenario"
)

// The weather round of the scenario docs, answered by llmproxy mock and by
// a bare handler that serves the very bytes mock wrote: the ratio of the two
// is the engine's and the writers' cost. The scenario restarts after its
// last step, so every iteration plays the whole round in one conversation.

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

func mockHandler(b *testing.B) http.Handler {
	b.Helper()
	s, err := scenario.Parse("weather.yaml", []byte(weatherScenario))
	if err != nil {
		b.Fatal(err)
	}
	e, err := scenario.NewEngine(s)
	if err != nil {
		b.Fatal(err)
	}
	p, err := proxy.New(proxy.Config{Mode: proxy.ModeMock, Scenarios: map[string]*scenario.Engine{"weather": e}, Transport: refuse{}})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// playRound sends the round's requests to h and returns the answers.
func playRound(b *testing.B, h http.Handler, round [][]byte) [][]byte {
	out := make([][]byte, len(round))
	for i, body := range round {
		r := httptest.NewRequest(http.MethodPost, chatPath, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("request %d: status %d: %s", i+1, w.Code, w.Body)
		}
		out[i], _ = io.ReadAll(w.Body)
	}
	return out
}

// bareRound serves the answers mock gave, in turn, with the same headers'
// content type: a handler that does no work but write the bytes.
type bareRound struct {
	answers     [][]byte
	contentType string
	n           int
}

func (h *bareRound) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", h.contentType)
	_, _ = w.Write(h.answers[h.n%len(h.answers)])
	h.n++
}

func benchMock(b *testing.B, mock bool, stream bool) {
	round := weatherRound(stream)
	var h http.Handler = mockHandler(b)
	if !mock {
		ct := "application/json"
		if stream {
			ct = "text/event-stream"
		}
		h = &bareRound{answers: playRound(b, h, round), contentType: ct}
	}
	// Two rounds give the same answers (ids aside) before any is timed.
	first, second := playRound(b, h, round), playRound(b, h, round)
	for i := range first {
		// Response ids count the conversation's answers
		// (chatcmpl-weather-1, -3, …) and the stream padding follows the
		// id; everything else repeats.
		if !bytes.Equal(answerID.ReplaceAll(second[i], nil), answerID.ReplaceAll(first[i], nil)) {
			b.Fatalf("answer %d changed between rounds:\n%s\nwant\n%s", i+1, second[i], first[i])
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		playRound(b, h, round)
	}
}

func BenchmarkMockWeatherJSON(b *testing.B)     { benchMock(b, true, false) }
func BenchmarkMockBareWeatherJSON(b *testing.B) { benchMock(b, false, false) }
func BenchmarkMockWeatherSSE(b *testing.B)      { benchMock(b, true, true) }
func BenchmarkMockBareWeatherSSE(b *testing.B)  { benchMock(b, false, true) }
