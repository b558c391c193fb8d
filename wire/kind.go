package wire

import (
	"slices"
	"strings"
)

// Kind names a provider API shape. Kinds are stored in cassettes, so their
// string values never change.
type Kind string

const (
	// KindOpenAIChat is OpenAI Chat Completions (POST …/chat/completions),
	// also spoken by Azure OpenAI, OpenRouter and other OpenAI-compatible
	// servers.
	KindOpenAIChat Kind = "openai-chat"
	// KindOpenAIResponses is the OpenAI Responses API (POST …/responses).
	KindOpenAIResponses Kind = "openai-responses"
	// KindAnthropicMessages is the Anthropic Messages API (POST …/v1/messages).
	KindAnthropicMessages Kind = "anthropic-messages"
	// KindGemini is Gemini generateContent and streamGenerateContent
	// (POST …/models/{model}:generateContent).
	KindGemini Kind = "gemini"
	// KindOllama is Ollama's native /api/chat and /api/generate.
	KindOllama Kind = "ollama"
	// KindEmbeddings is the OpenAI-shaped embeddings endpoint (POST …/embeddings).
	KindEmbeddings Kind = "embeddings"
	// KindBedrockConverse is Bedrock Runtime's Converse and ConverseStream
	// (POST …/model/{modelId}/converse, …/converse-stream).
	KindBedrockConverse Kind = "bedrock-converse"
	// KindBedrockInvoke is Bedrock Runtime's InvokeModel and
	// InvokeModelWithResponseStream (POST …/model/{modelId}/invoke,
	// …/invoke-with-response-stream), whose bodies are the model's own.
	KindBedrockInvoke Kind = "bedrock-invoke"
	// KindGeneric is everything else: bodies are carried, never interpreted.
	KindGeneric Kind = "generic"
	// KindMCP is a Model Context Protocol server's JSON-RPC traffic, routed
	// by the proxy's /mcp/NAME/ prefix, never by Detect. Package mcp reads
	// its bodies; here it is carried like KindGeneric, but its errors are
	// JSON-RPC errors (ErrorBody).
	KindMCP Kind = "mcp"
)

// Detect returns the API kind of a request. path is relative to the upstream
// (the routing prefix already removed) and may carry a query string.
//
// Only POST requests are model calls; any other method is KindGeneric, as is
// every path not listed here:
//
//	…/chat/completions                       openai-chat (includes Azure /openai/deployments/{name}/chat/completions)
//	…/responses                              openai-responses
//	…/v1/messages                            anthropic-messages
//	…/{model}:generateContent                gemini (v1, v1beta, Vertex publishers/google/models/…)
//	…/{model}:streamGenerateContent          gemini
//	…/{model}:rawPredict, :streamRawPredict  anthropic-messages (Anthropic on Vertex AI)
//	…/model/{id}/converse, /converse-stream  bedrock-converse
//	…/model/{id}/invoke, /invoke-with-response-stream  bedrock-invoke
//	…/api/chat, …/api/generate               ollama
//	…/embeddings                             embeddings (includes Azure deployments)
func Detect(method, path string) Kind {
	if !strings.EqualFold(method, "POST") {
		return KindGeneric
	}
	p := trimPath(path)
	last := p[strings.LastIndexByte(p, '/')+1:]
	switch {
	case strings.HasSuffix(p, "/chat/completions"):
		return KindOpenAIChat
	case strings.HasSuffix(p, "/responses"):
		return KindOpenAIResponses
	case strings.HasSuffix(p, "/v1/messages"):
		return KindAnthropicMessages
	case strings.HasSuffix(last, ":generateContent"), strings.HasSuffix(last, ":streamGenerateContent"):
		return KindGemini
	case strings.HasSuffix(last, ":rawPredict"), strings.HasSuffix(last, ":streamRawPredict"):
		return KindAnthropicMessages
	case strings.HasSuffix(p, "/api/chat"), strings.HasSuffix(p, "/api/generate"):
		return KindOllama
	case strings.HasSuffix(p, "/embeddings"):
		return KindEmbeddings
	}
	switch bedrockOperation(p) {
	case "converse", "converse-stream":
		return KindBedrockConverse
	case "invoke", "invoke-with-response-stream":
		return KindBedrockInvoke
	}
	return KindGeneric
}

// Provider returns the provider whose API shape the kind is: "openai",
// "anthropic", "gemini", "ollama" or "bedrock", and "" for KindGeneric or
// an unknown kind.
// An OpenAI-compatible server (OpenRouter, Ollama's /v1) is "openai" here.
func (k Kind) Provider() string {
	switch k {
	case KindOpenAIChat, KindOpenAIResponses, KindEmbeddings:
		return "openai"
	case KindAnthropicMessages:
		return "anthropic"
	case KindGemini:
		return "gemini"
	case KindOllama:
		return "ollama"
	case KindBedrockConverse, KindBedrockInvoke:
		return "bedrock"
	}
	return ""
}

// chatKinds are the chat APIs: the kinds whose requests carry messages,
// tool calls and tool results, which mock answers, a scenario's api
// condition names and from-cassette reads.
var chatKinds = [...]Kind{KindOpenAIChat, KindOpenAIResponses, KindAnthropicMessages, KindGemini, KindOllama, KindBedrockConverse, KindBedrockInvoke}

// ChatKinds returns the chat APIs, the kinds for which CallsTools holds, in
// this order: openai-chat, openai-responses, anthropic-messages, gemini,
// ollama, bedrock-converse, bedrock-invoke. The slice is the caller's.
// (bedrock-invoke's bodies are each model's own: Anthropic's and Nova's
// carry tool calls, Titan's and Llama's a prompt and its text.)
func ChatKinds() []Kind { return slices.Clone(chatKinds[:]) }

// CallsTools reports whether the API is a chat API, one that carries tool
// calls and tool results: every kind but embeddings, generic and unknown
// ones.
func (k Kind) CallsTools() bool { return slices.Contains(chatKinds[:], k) }

// ResponseIDPrefix is the prefix of the provider's response ids, as a
// scripted answer's id starts: "chatcmpl-" (OpenAI chat), "resp_"
// (Responses), "msg_" (Anthropic), and "" for the others.
func (k Kind) ResponseIDPrefix() string {
	switch k {
	case KindOpenAIChat:
		return "chatcmpl-"
	case KindOpenAIResponses:
		return "resp_"
	case KindAnthropicMessages:
		return "msg_"
	}
	return ""
}

// GeminiModel returns the model named by a Gemini path, the segment after
// "models/" (or "tunedModels/") up to the ":method" suffix:
// "gemini-2.0-flash" for /v1beta/models/gemini-2.0-flash:generateContent.
// It returns "" when the path names no model.
func GeminiModel(path string) string {
	p := trimPath(path)
	for _, marker := range []string{"/models/", "/tunedModels/"} {
		i := strings.LastIndex(p, marker)
		if i < 0 {
			continue
		}
		m := p[i+len(marker):]
		if j := strings.IndexAny(m, ":/"); j >= 0 {
			m = m[:j]
		}
		return m
	}
	return ""
}

// geminiStreaming reports whether a Gemini path asks for a streamed answer.
func geminiStreaming(path string) bool {
	return strings.HasSuffix(trimPath(path), ":streamGenerateContent")
}

// isOllamaGenerate reports whether an Ollama path is /api/generate.
func isOllamaGenerate(path string) bool {
	return strings.HasSuffix(trimPath(path), "/api/generate")
}

// trimPath drops the query, the fragment and one trailing slash.
func trimPath(path string) string {
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	if len(path) > 1 {
		path = strings.TrimSuffix(path, "/")
	}
	return path
}
