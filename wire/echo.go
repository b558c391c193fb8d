package wire

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// EchoMask is what MaskEchoes writes in place of an echo.
const EchoMask = "(echo)"

// Echoes returns the gjson paths of a request body, read as req from body,
// that repeat what earlier answers said rather than what the application
// chose to send: each turn the model wrote (role "assistant" or "model";
// a Responses item the model made: a *_call item or a reasoning item), the
// call id each tool result names, and previous_response_id. Two
// recordings of one conversation differ there whenever the model's earlier
// answers, or the ids the provider made up, differ.
func (req Request) Echoes(body []byte) []string {
	var out []string
	if gjson.GetBytes(body, "previous_response_id").Exists() {
		out = append(out, "previous_response_id")
	}
	for _, t := range req.Turns {
		if modelTurn(t.Role) && t.Path != "input" && t.Path != "prompt" {
			out = append(out, t.Path)
		}
	}
	// An InvokeModel body is Anthropic's or Nova's (Converse's): whichever
	// member the result has.
	keys := map[Kind][]string{KindOpenAIChat: {"tool_call_id"}, KindOllama: {"tool_call_id"}, KindOpenAIResponses: {"call_id"},
		KindAnthropicMessages: {"tool_use_id"}, KindGemini: {"id"}, KindBedrockConverse: {"toolUseId"},
		KindBedrockInvoke: {"tool_use_id", "toolUseId"}}[req.Kind]
	for _, r := range req.ToolResults {
		at := strings.LastIndexByte(r.Path, '.')
		if at < 0 {
			continue
		}
		for _, key := range keys {
			if p := r.Path[:at] + "." + key; gjson.GetBytes(body, p).Exists() {
				out = append(out, p)
			}
		}
	}
	return out
}

// modelTurn reports whether a turn of this role (or Responses item type)
// is one the model wrote.
func modelTurn(role string) bool {
	switch role {
	case "assistant", "model", "reasoning":
		return true
	}
	return strings.HasSuffix(role, "_call")
}

// MaskEchoes returns body with each of its echoes (Echoes) replaced by the
// string EchoMask, so that two requests that differ only there compare
// equal while a turn that is an echo in one and not in the other still
// differs. body is not changed; an error wraps ErrMalformed; a body with no echoes is returned as it is.
func (req Request) MaskEchoes(body []byte) ([]byte, error) {
	paths := req.Echoes(body)
	if len(paths) == 0 {
		return body, nil
	}
	out := append([]byte(nil), body...)
	for _, p := range paths {
		var err error
		if out, err = sjson.SetBytes(out, p, EchoMask); err != nil {
			return body, fmt.Errorf("%s request: mask %s: %w: %v", req.Kind, p, ErrMalformed, err)
		}
	}
	return out, nil
}

// Part names what a top-level member of a request body of this kind is
// about, for a reviewer: PartPrompt (the conversation, system prompt or
// instructions), PartTools (the tools offered and the choice among them),
// or PartParameters (anything else: model, temperature, output format, …).
// path is a gjson path in the body; its first segment decides.
func Part(kind Kind, path string) string {
	top, _, _ := strings.Cut(path, ".")
	if top != "" && top == turnsKey(kind) {
		return PartPrompt
	}
	switch top {
	case "system", "instructions", "systemInstruction", "system_instruction", "prompt", "input", "messages", "contents", "inputText":
		return PartPrompt
	case "tools", "functions", "tool_choice", "function_call", "toolConfig", "tool_config", "parallel_tool_calls":
		return PartTools
	}
	return PartParameters
}

// What Part names.
const (
	PartPrompt     = "prompt"
	PartTools      = "tools offered"
	PartParameters = "parameters"
)
