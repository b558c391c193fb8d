package wire

import (
	"unsafe"

	"github.com/tidwall/gjson"
)

// OpeningSpans returns what opens a request's conversation: its system
// prompt where the wire keeps one outside the turns (Anthropic's and
// Bedrock's system, the Responses instructions, Gemini's
// systemInstruction; nil when there is none) and its first turn (or a
// Responses input that is one string), as raw JSON. Every request of a
// conversation resends both as they were, so the opening tells
// conversations apart without reading the whole request, as ParseRequest
// would. Both are slices of body itself: nothing is copied, so a caller
// that only digests them allocates nothing. ok is false when the kind has
// no turns, the body has none, or it continues a stored Responses answer
// (previous_response_id), whose first turn is not the conversation's.
func OpeningSpans(kind Kind, body []byte) (sys, first []byte, ok bool) {
	path := firstTurnPath(kind)
	if path == "" || len(body) == 0 {
		return nil, nil, false
	}
	// gjson reads a string; this one views body without copying it, and
	// nothing here keeps it or writes through it.
	json := unsafe.String(unsafe.SliceData(body), len(body))
	f := gjson.Get(json, path)
	if !f.Exists() && kind == KindOpenAIResponses {
		if f = gjson.Get(json, "input"); f.Type != gjson.String {
			return nil, nil, false
		}
	}
	if !f.Exists() || kind == KindOpenAIResponses && gjson.Get(json, "previous_response_id").Exists() {
		return nil, nil, false
	}
	var s gjson.Result
	switch kind {
	case KindAnthropicMessages, KindBedrockConverse, KindBedrockInvoke:
		s = gjson.Get(json, "system")
	case KindOpenAIResponses:
		s = gjson.Get(json, "instructions")
	case KindGemini:
		if s = gjson.Get(json, "systemInstruction"); !s.Exists() {
			s = gjson.Get(json, "system_instruction")
		}
	}
	return rawSpan(body, s), rawSpan(body, f), true
}

// firstTurnPath is the gjson path of a request's first turn; "" for a
// kind without turns.
func firstTurnPath(kind Kind) string {
	switch turnsKey(kind) {
	case "messages":
		return "messages.0"
	case "input":
		return "input.0"
	case "contents":
		return "contents.0"
	}
	return ""
}

// rawSpan is the bytes of body that r, read from a view of body, was read
// from; nil when r does not exist.
func rawSpan(body []byte, r gjson.Result) []byte {
	if r.Raw == "" {
		return nil
	}
	if r.Index > 0 && r.Index+len(r.Raw) <= len(body) {
		return body[r.Index : r.Index+len(r.Raw) : r.Index+len(r.Raw)]
	}
	return []byte(r.Raw) // not a plain slice of the body (gjson did not say where)
}
