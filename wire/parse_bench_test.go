package wire_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

// weatherResult is the second request of the bench's weather round: a
// question, the call, its result and the tools offered.
var weatherResult = []byte(`{"model":"gpt-4o-mini","stream":false,"messages":[{"role":"user","content":"What's the weather in Paris?"},` +
	`{"role":"assistant","tool_calls":[{"id":"call_paris","type":"function","function":{"name":"weather","arguments":"{\"location\":\"Paris\",\"unit\":\"celsius\"}"}}]},` +
	`{"role":"tool","tool_call_id":"call_paris","content":"{\"location\":\"Paris\",\"temperature\":21,\"unit\":\"celsius\",\"condition\":\"sunny\"}"}],` +
	`"tools":[{"type":"function","function":{"name":"weather","parameters":{"type":"object"}}}]}`)

// longHistory is a chat request after 50 turns of 2 KB each: about 100 KB.
func longHistory() []byte {
	var b bytes.Buffer
	b.WriteString(`{"model":"gpt-4o-mini","stream":false,"messages":[`)
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 45)
	for i := range 50 {
		fmt.Fprintf(&b, `{"role":%q,"content":%q},`, [2]string{"user", "assistant"}[i%2], text)
	}
	b.WriteString(`{"role":"user","content":"And now?"}]}`)
	return b.Bytes()
}

// BenchmarkParseRequest reads the weather round's second request, and a
// long conversation's.
func BenchmarkParseRequest(b *testing.B) {
	benchBodies(b, func(body []byte) error {
		_, err := wire.ParseRequest(wire.KindOpenAIChat, "/v1/chat/completions", body)
		return err
	})
}

// BenchmarkOptionsFor reads the same requests and the options to answer
// them with, as mock does for every request.
func BenchmarkOptionsFor(b *testing.B) {
	benchBodies(b, func(body []byte) error {
		_, err := wire.OptionsFor(wire.KindOpenAIChat, "/v1/chat/completions", body)
		return err
	})
}

// benchBodies times read on the weather round's second request and on a
// long conversation's.
func benchBodies(b *testing.B, read func(body []byte) error) {
	for _, c := range []struct {
		name string
		body []byte
	}{{"weather-result", weatherResult}, {"long-history", longHistory()}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := read(c.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
