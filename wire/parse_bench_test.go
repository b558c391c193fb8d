package wire_test

import (
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

// weatherResult is the second request of the bench's weather round: a
// question, the call, its result and the tools offered.
var weatherResult = []byte(`{"model":"gpt-4o-mini","stream":false,"messages":[{"role":"user","content":"What's the weather in Paris?"},` +
	`{"role":"assistant","tool_calls":[{"id":"call_paris","type":"function","function":{"name":"weather","arguments":"{\"location\":\"Paris\",\"unit\":\"celsius\"}"}}]},` +
	`{"role":"tool","tool_call_id":"call_paris","content":"{\"location\":\"Paris\",\"temperature\":21,\"unit\":\"celsius\",\"condition\":\"sunny\"}"}],` +
	`"tools":[{"type":"function","function":{"name":"weather","parameters":{"type":"object"}}}]}`)

// BenchmarkParseRequest reads the weather round's second request.
func BenchmarkParseRequest(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := wire.ParseRequest(wire.KindOpenAIChat, "/v1/chat/completions", weatherResult); err != nil {
			b.Fatal(err)
		}
	}
}
