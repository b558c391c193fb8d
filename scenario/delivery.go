package scenario

import (
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/wire"
)

// Delivery is an answer with how to deliver it: what the serving layer hands
// to the wire writers, and what it waits for.
type Delivery struct {
	// Scenario, Conversation and Step say who answers, for logs.
	Scenario     string
	Conversation string
	Step         string
	// Answer is the answer; for an error answer only its Model and ID are
	// meaningful.
	Answer wire.Answer
	// Error, when set, makes the answer this provider error instead.
	Error *ErrorAnswer
	// Delay is waited before the first byte: the step's delay plus the
	// delays of the fixtures it calls.
	Delay time.Duration
	// Stream says how a streamed answer's text is cut (Pieces) and paced.
	Stream Stream
	// CutAfter, when positive, closes the connection after that many
	// streamed events (after the headers for a request that does not
	// stream); the answer then counts as delivered once they were.
	CutAfter int
	// Fixtures are the fixtures the answer calls, with the call ids this
	// answer gave them, for the fixtures endpoint and the log.
	Fixtures []presets.Fixture
}

// Pieces cuts text as a stream sends it: pieces of Chunk characters, or with
// Chunk zero one piece per word (a word with the spaces after it). The
// pieces joined are text; "" gives no piece.
func (s Stream) Pieces(text string) []string {
	var out []string
	if s.Chunk > 0 {
		for len(text) > 0 {
			end, n := 0, 0
			for end < len(text) && n < s.Chunk {
				_, size := utf8.DecodeRuneInString(text[end:])
				end += size
				n++
			}
			out = append(out, text[:end])
			text = text[end:]
		}
		return out
	}
	start := 0
	inWord := false
	for i, r := range text {
		space := unicode.IsSpace(r)
		if !space && !inWord && i > start && hasWord(text[start:i]) {
			out = append(out, text[start:i])
			start = i
		}
		inWord = !space
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// hasWord reports whether s holds anything but spaces.
func hasWord(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) {
			return true
		}
	}
	return false
}
