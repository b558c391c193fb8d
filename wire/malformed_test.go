package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

func TestMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    wire.Framing
		raw  string
		want string
	}{
		{"sse data", wire.FramingSSE, "data: {\"a\":\"bcdef\"}\n\n", "data: {\"a\":\"\n\n"},
		{"sse named", wire.FramingSSE, "event: message_delta\r\ndata: {\"ab\":1}\r\n\r\n", "event: message_delta\r\ndata: {\"ab\r\n\r\n"},
		{"sse no data", wire.FramingSSE, ": ping\n\n", ": ping\ndata: {\n\n"},
		{"ndjson", wire.FramingNDJSON, "{\"done\":false}\n", "{\"done\"\n"},
		{"body", wire.FramingNone, `{"id":"x"}`, `{"id"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := []byte(tc.raw)
			got := wire.Malformed(tc.f, raw)
			if string(got) != tc.want {
				t.Errorf("Malformed(%q) = %q, want %q", tc.raw, got, tc.want)
			}
			if string(raw) != tc.raw {
				t.Errorf("raw changed to %q", raw)
			}
		})
	}
}

func TestMalformedEventStream(t *testing.T) {
	payload := []byte(`{"contentBlockIndex":0,"delta":{"text":"Hello"}}`)
	raw, err := wire.EncodeEventStream([]wire.EventStreamHeader{wire.StringHeader(":event-type", "contentBlockDelta")}, payload)
	if err != nil {
		t.Fatal(err)
	}
	got := wire.Malformed(wire.FramingEventStream, raw)
	m, err := wire.DecodeEventStream(got)
	if err != nil {
		t.Fatalf("the malformed message does not decode as a message: %v", err)
	}
	if m.Header(":event-type") != "contentBlockDelta" || json.Valid(m.Payload) || len(m.Payload) != len(payload)/2 {
		t.Errorf("payload %q (headers %v): want the first half of %q", m.Payload, m.Headers, payload)
	}
}
