package wire_test

import (
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

// TestResponseUsageAndModel reads the token counts and the answering model
// of captured answers on every wire, streamed usage in the last event
// included.
func TestResponseUsageAndModel(t *testing.T) {
	tests := []struct {
		file    string
		kind    wire.Kind
		framing wire.Framing
		usage   wire.Usage
		model   string
	}{
		{"openai-chat-toolcalls.response.json", wire.KindOpenAIChat, wire.FramingNone, wire.Usage{Input: 92, Output: 17}, "gpt-4o-mini-2024-07-18"},
		{"openai-chat-stream-toolcalls.sse", wire.KindOpenAIChat, wire.FramingSSE, wire.Usage{Input: 53, Output: 15}, "gpt-4o-mini-2024-07-18"},
		{"openai-responses-stream-functioncall.sse", wire.KindOpenAIResponses, wire.FramingSSE, wire.Usage{Input: 58, Output: 23}, "gpt-5.5-2026-04-23"},
		{"anthropic-messages-stream-tooluse.sse", wire.KindAnthropicMessages, wire.FramingSSE, wire.Usage{Input: 599, Output: 135}, "claude-3-opus-20240229"},
		{"gemini-streamgeneratecontent-sse-functioncall.sse", wire.KindGemini, wire.FramingSSE, wire.Usage{Input: 29, Output: 212, Reasoning: 202}, "gemini-3-pro-preview"},
		{"gemini-generatecontent-functioncall-thinking.response.json", wire.KindGemini, wire.FramingNone, wire.Usage{Input: 38, Output: 509, Reasoning: 501}, "gemini-2.5-pro"},
		{"ollama-api-chat-stream-toolcalls.ndjson", wire.KindOllama, wire.FramingNDJSON, wire.Usage{Input: 169, Output: 15}, "llama3.2"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r, err := wire.ParseResponse(tt.kind, tt.framing, mustRead(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if r.Usage != tt.usage {
				t.Errorf("usage %+v, want %+v", r.Usage, tt.usage)
			}
			if r.Model != tt.model {
				t.Errorf("model %q, want %q", r.Model, tt.model)
			}
		})
	}
}

// TestResponseCachedTokens reads the prompt-cache counts of each wire; an
// Anthropic prompt counts its cache reads and writes into Input.
func TestResponseCachedTokens(t *testing.T) {
	tests := []struct {
		name    string
		kind    wire.Kind
		framing wire.Framing
		body    string
		want    wire.Usage
	}{
		{"chat", wire.KindOpenAIChat, wire.FramingNone,
			`{"model":"m","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":64},"completion_tokens_details":{"reasoning_tokens":3}}}`,
			wire.Usage{Input: 100, Output: 7, Reasoning: 3, Cached: 64}},
		{"responses", wire.KindOpenAIResponses, wire.FramingNone,
			`{"object":"response","model":"m","status":"completed","output":[],"usage":{"input_tokens":90,"input_tokens_details":{"cached_tokens":32},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2}}}`,
			wire.Usage{Input: 90, Output: 5, Reasoning: 2, Cached: 32}},
		{"anthropic stream", wire.KindAnthropicMessages, wire.FramingSSE,
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":10,\"cache_creation_input_tokens\":20,\"cache_read_input_tokens\":30,\"output_tokens\":1}}}\n\n" +
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":42}}\n\n",
			wire.Usage{Input: 60, Output: 42, Cached: 30}},
		{"gemini", wire.KindGemini, wire.FramingNone,
			`{"modelVersion":"m","candidates":[],"usageMetadata":{"promptTokenCount":50,"cachedContentTokenCount":40,"candidatesTokenCount":4,"thoughtsTokenCount":6}}`,
			wire.Usage{Input: 50, Output: 10, Reasoning: 6, Cached: 40}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := wire.ParseResponse(tt.kind, tt.framing, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if r.Usage != tt.want {
				t.Errorf("usage %+v, want %+v", r.Usage, tt.want)
			}
			if r.Model != "m" {
				t.Errorf("model %q, want m", r.Model)
			}
		})
	}
}
