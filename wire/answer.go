package wire

import "time"

// Answer is a model's answer in provider-neutral terms: what llmproxy writes
// in a provider's own format when it answers a request itself (a scripted
// scenario, an injected fault) instead of replaying recorded bytes.
//
// The writers turn an Answer into the body, or the stream, that the provider
// of a Kind sends; wire's readers (ParseResponse) given that body return the
// same text, reasoning, tool calls, finish reason and usage again. The same
// Answer and options always give the same bytes.
type Answer struct {
	// Model is the model named in the answer.
	Model string
	// ID is the response id, with the provider's own prefix
	// ("chatcmpl-…", "resp_…", "msg_…").
	ID string
	// Created is the creation time, in whole seconds where the wire has one
	// (Ollama's created_at keeps nanoseconds); the zero time is written as
	// the Unix epoch.
	Created time.Time
	// Text is the assistant text; "" for none.
	Text string
	// Reasoning is thinking or reasoning text, written only on the wires
	// that carry it; "" for none.
	Reasoning string
	// ToolCalls are the function calls, in order. Arguments is the JSON
	// object text of each call's arguments; ID is its call id.
	ToolCalls []ToolCall
	// Finish is the provider-neutral finish reason.
	Finish Finish
	// Usage counts tokens.
	Usage Usage
	// Embedding is the vector of an embeddings answer.
	Embedding []float64
}

// Finish is a provider-neutral finish reason, written as each provider's own
// (finish_reason, stop_reason, finishReason, done_reason, status).
type Finish string

const (
	// FinishStop is a natural end of the answer.
	FinishStop Finish = "stop"
	// FinishLength is an answer cut at its token limit.
	FinishLength Finish = "length"
	// FinishToolCalls is an answer that ends by calling tools.
	FinishToolCalls Finish = "tool-calls"
)

// Usage is the token count of an answer.
type Usage struct {
	// Input is the number of prompt (input) tokens.
	Input int
	// Output is the number of completion (output) tokens, reasoning
	// included.
	Output int
	// Reasoning is the part of Output spent on reasoning, written where the
	// wire counts it apart (OpenAI reasoning_tokens, Gemini
	// thoughtsTokenCount, whose candidatesTokenCount is then Output minus
	// Reasoning); 0 for none.
	Reasoning int
	// Cached is the part of Input read from the provider's prompt cache
	// (OpenAI cached_tokens, Anthropic cache_read_input_tokens, Gemini
	// cachedContentTokenCount); 0 for none. The writers do not write it.
	Cached int
}

// Add returns the sum of two usages, count by count.
func (u Usage) Add(o Usage) Usage {
	return Usage{Input: u.Input + o.Input, Output: u.Output + o.Output, Reasoning: u.Reasoning + o.Reasoning, Cached: u.Cached + o.Cached}
}
