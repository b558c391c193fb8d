package main

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"testing"
)

// The in-process timing of the mock cases (mock.go): every iteration plays
// the case's whole round in one conversation.

func mockHandler(b *testing.B) http.Handler {
	b.Helper()
	p, err := newMockHandler(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}

// playRound sends the round's requests to h, in a conversation of the
// named scenario, and returns the answers.
func playRound(b *testing.B, h http.Handler, scenarioName string, round [][]byte) [][]byte {
	answers, err := playMock(h, scenarioName, round)
	if err != nil {
		b.Fatal(err)
	}
	out := make([][]byte, len(answers))
	for i, a := range answers {
		out[i] = a.body
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

func benchMock(b *testing.B, mock bool, payload string) {
	i := slices.IndexFunc(mockCases(), func(c mockCase) bool { return c.payload == payload })
	cs := mockCases()[i]
	var h http.Handler = mockHandler(b)
	if !mock {
		ct := "application/json"
		if cs.stream {
			ct = "text/event-stream"
		}
		h = &bareRound{answers: playRound(b, h, cs.scenario, cs.round), contentType: ct}
	}
	// Two rounds give the same answers (ids aside) before any is timed.
	first, second := playRound(b, h, cs.scenario, cs.round), playRound(b, h, cs.scenario, cs.round)
	for i := range first {
		// Response ids count the conversation's answers
		// (chatcmpl-weather-1, -3, …) and the stream padding follows the
		// id; everything else repeats.
		if !bytes.Equal(answerID.ReplaceAll(second[i], nil), answerID.ReplaceAll(first[i], nil)) {
			b.Fatalf("answer %d changed between rounds:\n%s\nwant\n%s", i+1, second[i], first[i])
		}
	}
	b.ReportAllocs()
	// The process's CPU time per round (the GC's included) is reported
	// beside the wall time, which on a shared machine is mostly waiting.
	cpu0 := selfCPU()
	for b.Loop() {
		playRound(b, h, cs.scenario, cs.round)
	}
	b.ReportMetric(float64((selfCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

func BenchmarkMockWeatherJSON(b *testing.B)     { benchMock(b, true, payloadMockJSON) }
func BenchmarkMockBareWeatherJSON(b *testing.B) { benchMock(b, false, payloadMockJSON) }
func BenchmarkMockWeatherSSE(b *testing.B)      { benchMock(b, true, payloadMockSSE) }
func BenchmarkMockBareWeatherSSE(b *testing.B)  { benchMock(b, false, payloadMockSSE) }
func BenchmarkMockTextJSON(b *testing.B)        { benchMock(b, true, payloadMockTextJSON) }
func BenchmarkMockBareTextJSON(b *testing.B)    { benchMock(b, false, payloadMockTextJSON) }
func BenchmarkMockTextSSE(b *testing.B)         { benchMock(b, true, payloadMockTextSSE) }
func BenchmarkMockBareTextSSE(b *testing.B)     { benchMock(b, false, payloadMockTextSSE) }
