package wire_test

import (
	"slices"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

func TestDetect(t *testing.T) {
	tests := []struct {
		method, path string
		want         wire.Kind
	}{
		{"POST", "/v1/chat/completions", wire.KindOpenAIChat},
		{"post", "/v1/chat/completions?api-version=1", wire.KindOpenAIChat},
		{"POST", "/chat/completions", wire.KindOpenAIChat},
		{"POST", "/v1/chat/completions/", wire.KindOpenAIChat},
		{"POST", "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21", wire.KindOpenAIChat},
		{"POST", "/api/v1/chat/completions", wire.KindOpenAIChat},
		{"POST", "/v1beta/openai/chat/completions", wire.KindOpenAIChat},
		{"GET", "/v1/chat/completions", wire.KindGeneric},
		{"POST", "/v1/responses", wire.KindOpenAIResponses},
		{"POST", "/openai/v1/responses?api-version=preview", wire.KindOpenAIResponses},
		{"GET", "/v1/responses/resp_123", wire.KindGeneric},
		{"POST", "/v1/responses/resp_123/cancel", wire.KindGeneric},
		{"POST", "/v1/messages", wire.KindAnthropicMessages},
		{"POST", "/v1/messages?beta=true", wire.KindAnthropicMessages},
		{"POST", "/v1/messages/count_tokens", wire.KindGeneric},
		{"POST", "/v1/threads/thread_1/messages", wire.KindGeneric},
		{"POST", "/v1beta/models/gemini-2.0-flash:generateContent", wire.KindGemini},
		{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", wire.KindGemini},
		{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?key=REDACTED", wire.KindGemini},
		{"POST", "/v1/models/gemini-1.5-pro:generateContent", wire.KindGemini},
		{"POST", "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash:generateContent", wire.KindGemini},
		{"POST", "/v1beta/models/text-embedding-004:embedContent", wire.KindGeneric},
		{"POST", "/v1beta/models/gemini-2.0-flash:countTokens", wire.KindGeneric},
		{"POST", "/api/chat", wire.KindOllama},
		{"POST", "/api/generate", wire.KindOllama},
		{"POST", "/api/tags", wire.KindGeneric},
		{"POST", "/v1/embeddings", wire.KindEmbeddings},
		{"POST", "/openai/deployments/ada/embeddings?api-version=2024-10-21", wire.KindEmbeddings},
		{"GET", "/v1/models", wire.KindGeneric},
		{"GET", "/v1beta/models", wire.KindGeneric},
		{"POST", "/", wire.KindGeneric},
		{"POST", "", wire.KindGeneric},
		{"DELETE", "/v1/files/x", wire.KindGeneric},
	}
	for _, tt := range tests {
		if got := wire.Detect(tt.method, tt.path); got != tt.want {
			t.Errorf("Detect(%q, %q) = %q, want %q", tt.method, tt.path, got, tt.want)
		}
	}
}

func TestKindProvider(t *testing.T) {
	tests := []struct {
		kind wire.Kind
		want string
	}{
		{wire.KindOpenAIChat, "openai"},
		{wire.KindOpenAIResponses, "openai"},
		{wire.KindEmbeddings, "openai"},
		{wire.KindAnthropicMessages, "anthropic"},
		{wire.KindGemini, "gemini"},
		{wire.KindOllama, "ollama"},
		{wire.KindGeneric, ""},
		{wire.Kind("future-kind"), ""},
	}
	for _, tt := range tests {
		if got := tt.kind.Provider(); got != tt.want {
			t.Errorf("%q.Provider() = %q, want %q", tt.kind, got, tt.want)
		}
	}
}

func TestGeminiModel(t *testing.T) {
	tests := []struct{ path, want string }{
		{"/v1beta/models/gemini-2.0-flash:generateContent", "gemini-2.0-flash"},
		{"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "gemini-2.5-flash"},
		{"/v1/models/gemini-1.5-pro:generateContent?key=k", "gemini-1.5-pro"},
		{"/v1/projects/p/locations/l/publishers/google/models/gemini-2.0-flash-001:generateContent", "gemini-2.0-flash-001"},
		{"/v1beta/tunedModels/my-model-abc:generateContent", "my-model-abc"},
		{"/v1beta/models/gemini-pro", "gemini-pro"},
		{"/v1beta/models", ""},
		{"/v1/chat/completions", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := wire.GeminiModel(tt.path); got != tt.want {
			t.Errorf("GeminiModel(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

// TestChatKinds: the one list of chat APIs is what CallsTools says, and
// each has its provider's response id prefix.
func TestChatKinds(t *testing.T) {
	want := []wire.Kind{wire.KindOpenAIChat, wire.KindOpenAIResponses, wire.KindAnthropicMessages, wire.KindGemini, wire.KindOllama, wire.KindBedrockConverse, wire.KindBedrockInvoke}
	if got := wire.ChatKinds(); !slices.Equal(got, want) {
		t.Errorf("ChatKinds() = %v, want %v", got, want)
	}
	wire.ChatKinds()[0] = wire.KindGeneric // a copy: the list stays
	for _, k := range append(want, wire.KindEmbeddings, wire.KindGeneric, "nope") {
		if k.CallsTools() != slices.Contains(want, k) {
			t.Errorf("%s: CallsTools %v", k, k.CallsTools())
		}
	}
	prefixes := map[wire.Kind]string{wire.KindOpenAIChat: "chatcmpl-", wire.KindOpenAIResponses: "resp_", wire.KindAnthropicMessages: "msg_"}
	for _, k := range append(want, wire.KindEmbeddings, wire.KindGeneric) {
		if got := k.ResponseIDPrefix(); got != prefixes[k] {
			t.Errorf("%s: ResponseIDPrefix %q, want %q", k, got, prefixes[k])
		}
	}
}
