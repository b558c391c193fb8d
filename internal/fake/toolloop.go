package fake

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ToolLoop describes the conversation a provider script plays: asked without
// a tool result, the model calls Tool with Args; asked again with the result
// of that call, it answers Answer.
//
//	fake.OpenAIChat(fake.ToolLoop{
//		Tool:   "weather",
//		Args:   `{"location":"Paris","unit":"celsius"}`,
//		CallID: "call_paris",
//		Answer: "It is 21 °C and sunny in Paris.",
//	})
type ToolLoop struct {
	// Tool is the name of the function the model calls. Required.
	Tool string
	// Args is the call's arguments, a JSON object; empty means {}. OpenAI
	// sends it as this exact string, the others as the object compacted.
	Args string
	// CallID is the call's id; empty means "call_" + Tool. Gemini's API sends
	// no id with a functionCall, so the Gemini script ignores it.
	CallID string
	// Answer is the model's final text.
	Answer string
}

// loop is a checked ToolLoop with its defaults filled in.
type loop struct {
	ToolLoop
	argsCompact []byte // Args as compact JSON
}

// check fills in the defaults and panics on a malformed loop: the loop is a
// literal in a test, so a mistake in it is a programming error.
func (l ToolLoop) check() loop {
	if strings.TrimSpace(l.Tool) == "" {
		panic("fake: ToolLoop.Tool is empty")
	}
	if strings.TrimSpace(l.Args) == "" {
		l.Args = "{}"
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(l.Args), &obj); err != nil || obj == nil {
		panic(fmt.Sprintf("fake: ToolLoop.Args %q is not a JSON object", l.Args))
	}
	if l.CallID == "" {
		l.CallID = "call_" + l.Tool
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(l.Args)); err != nil {
		panic(fmt.Sprintf("fake: ToolLoop.Args: %v", err))
	}
	return loop{ToolLoop: l, argsCompact: buf.Bytes()}
}

// seq is a deterministic stream of pseudo-random numbers: SHA-256 of a seed
// and a counter. It stands in for the randomness of real ids and padding, so
// that the same loop always produces the same bytes.
type seq struct {
	seed string
	n    uint64
}

// seq seeds a stream from the loop, the API and the turn.
func (l loop) seq(api string, turn int) *seq {
	return &seq{seed: fmt.Sprintf("%s\x00%d\x00%s\x00%s\x00%s\x00%s", api, turn, l.Tool, l.Args, l.CallID, l.Answer)}
}

func (s *seq) block() [32]byte {
	var ctr [8]byte
	binary.BigEndian.PutUint64(ctr[:], s.n)
	s.n++
	return sha256.Sum256(append([]byte(s.seed), ctr[:]...))
}

// intn returns a number in [0, n).
func (s *seq) intn(n int) int {
	b := s.block()
	return int(binary.BigEndian.Uint64(b[:8]) % uint64(n))
}

// between returns a number in [lo, hi].
func (s *seq) between(lo, hi int) int { return lo + s.intn(hi-lo+1) }

const (
	alnumChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	hexChars   = "0123456789abcdef"
)

// chars returns n characters drawn from set.
func (s *seq) chars(set string, n int) string {
	out := make([]byte, 0, n)
	for len(out) < n {
		b := s.block()
		for _, c := range b {
			if len(out) == n {
				break
			}
			out = append(out, set[int(c)%len(set)])
		}
	}
	return string(out)
}

func (s *seq) alnum(n int) string { return s.chars(alnumChars, n) }
func (s *seq) hex(n int) string   { return s.chars(hexChars, n) }

// base64 returns n pseudo-random bytes in standard base64, like Gemini's
// thoughtSignature.
func (s *seq) base64(n int) string {
	raw := make([]byte, 0, n)
	for len(raw) < n {
		b := s.block()
		raw = append(raw, b[:min(32, n-len(raw))]...)
	}
	return base64.StdEncoding.EncodeToString(raw)
}

// words splits text the way models stream it: a piece per word, each but the
// first carrying its leading space ("It", " is", " 21", " °C").
func words(text string) []string {
	var out []string
	start := 0
	for i, r := range text {
		if r == ' ' && i > start && text[i-1] != ' ' {
			out = append(out, text[start:i])
			start = i
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// tokens splits a JSON arguments string into tokenizer-like fragments, as
// OpenAI streams them: runs of letters, runs of up to three digits, runs of
// punctuation, a space staying with what follows. `{"country":"UK"}` gives
// `{"`, `country`, `":"`, `UK`, `"}`.
func tokens(s string) []string {
	class := func(r rune) int {
		switch {
		case unicode.IsLetter(r) || r == '_':
			return 1
		case unicode.IsDigit(r):
			return 2
		case r == ' ':
			return 3
		}
		return 4
	}
	var out []string
	start, prev, digits := 0, 0, 0
	for i, r := range s {
		c := class(r)
		split := i > start && c != prev && prev != 3
		if c == 2 && prev == 2 && digits == 3 {
			split = true
		}
		if split {
			out = append(out, s[start:i])
			start, digits = i, 0
		}
		if c == 2 {
			digits++
		} else {
			digits = 0
		}
		prev = c
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// chunks splits s into pieces of a few characters each, never inside a UTF-8
// sequence, the first ending at the first colon, as Anthropic streams
// input_json_delta fragments (`{"location":`, ` "Sa`, `n Fran`, …).
func chunks(s string, rnd *seq) []string {
	var out []string
	if i := strings.IndexByte(s, ':'); i >= 0 {
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	for len(s) > 0 {
		n := rnd.between(3, 11)
		end := 0
		for k := 0; k < n && end < len(s); k++ {
			_, size := utf8.DecodeRuneInString(s[end:])
			end += size
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// marshal encodes v as compact JSON without HTML escaping, as the providers
// do (they send "<" and "&" as they are).
func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("fake: encode %T: %v", v, err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// indent pretty-prints compact JSON with the given indent, keeping key order
// and number spelling.
func indent(compact []byte, in string) []byte {
	var buf bytes.Buffer
	if err := json.Indent(&buf, compact, "", in); err != nil {
		panic(fmt.Sprintf("fake: indent: %v", err))
	}
	return buf.Bytes()
}

// googleSpacing puts a space after every key's colon, leaving commas alone:
// the layout of Gemini's alt=sse events (`{"candidates": [{"content": …},"index": 0}]`).
func googleSpacing(compact []byte) []byte {
	out := make([]byte, 0, len(compact)+len(compact)/8)
	inString, escaped := false, false
	for _, c := range compact {
		out = append(out, c)
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && c == ':':
			out = append(out, ' ')
		}
	}
	return out
}

// raw is a JSON literal kept as spelled: "null", "0.0", "[]".
func raw(s string) json.RawMessage { return json.RawMessage(s) }

// quoted is s as a JSON string literal.
func quoted(s string) json.RawMessage { return marshal(s) }

// jsonBody decodes a request body, answering in the provider's error shape
// when it is not JSON.
func jsonBody(p provider, body []byte, v any) *Response {
	if err := json.Unmarshal(body, v); err != nil {
		return apiError(p, http.StatusBadRequest, fmt.Sprintf("the request body is not valid JSON: %v", err))
	}
	return nil
}
