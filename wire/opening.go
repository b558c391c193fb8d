package wire

import "github.com/tidwall/gjson"

// Opening returns the raw JSON that opens a request's conversation: its
// system prompt where the wire keeps one outside the turns (Anthropic's
// and Bedrock's system, the Responses instructions, Gemini's
// systemInstruction), a newline, then its first turn (or a Responses input
// that is one string). Every request of a conversation resends both as
// they were, so the opening tells conversations apart without reading the
// whole request, as ParseRequest would. It is nil when the kind has no
// turns, the body has none, or it continues a stored Responses answer
// (previous_response_id), whose first turn is not the conversation's.
func Opening(kind Kind, body []byte) []byte {
	key := turnsKey(kind)
	if key == "" {
		return nil
	}
	first := gjson.GetBytes(body, key+".0")
	if !first.Exists() && kind == KindOpenAIResponses {
		if first = gjson.GetBytes(body, key); first.Type != gjson.String {
			return nil
		}
	}
	if !first.Exists() || kind == KindOpenAIResponses && gjson.GetBytes(body, "previous_response_id").Exists() {
		return nil
	}
	var sys gjson.Result
	switch kind {
	case KindAnthropicMessages, KindBedrockConverse, KindBedrockInvoke:
		sys = gjson.GetBytes(body, "system")
	case KindOpenAIResponses:
		sys = gjson.GetBytes(body, "instructions")
	case KindGemini:
		if sys = gjson.GetBytes(body, "systemInstruction"); !sys.Exists() {
			sys = gjson.GetBytes(body, "system_instruction")
		}
	}
	out := make([]byte, 0, len(sys.Raw)+1+len(first.Raw))
	out = append(append(append(out, sys.Raw...), '\n'), first.Raw...)
	return out
}
