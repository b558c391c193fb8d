package main

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// The in-process timing of the weather round (mock.go): every iteration
// plays the whole round in one conversation.

func mockHandler(b *testing.B) http.Handler {
	b.Helper()
	p, err := newMockHandler(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}

// playRound sends the round's requests to h and returns the answers.
func playRound(b *testing.B, h http.Handler, round [][]byte) [][]byte {
	answers, err := playMock(h, round)
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
