package fake

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/llmproxy/llmproxy/wire"
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

// call is the loop's tool call, its arguments as given.
func (l loop) call() wire.ToolCall {
	return wire.ToolCall{ID: l.CallID, Name: l.Tool, Arguments: []byte(l.Args)}
}

// seq is a deterministic stream of pseudo-random numbers: SHA-256 of a seed
// and a counter. It stands in for the randomness of real response ids, so that
// the same loop always produces the same bytes.
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

// jsonBody decodes a request body, answering in the provider's error shape
// when it is not JSON.
func jsonBody(p provider, body []byte, v any) *Response {
	if err := json.Unmarshal(body, v); err != nil {
		return apiError(p, http.StatusBadRequest, fmt.Sprintf("the request body is not valid JSON: %v", err))
	}
	return nil
}
