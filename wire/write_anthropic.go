package wire

import (
	"net/http"
	"unicode/utf8"
)

// Anthropic content types, as the API sends them.
const (
	anthropicJSON   = "application/json"
	anthropicStream = "text/event-stream; charset=utf-8"
)

// anthropicHeader is Content-Type and the request-id Anthropic sends with
// every answer.
func anthropicHeader(contentType, id string) http.Header {
	h := header(contentType)
	h.Set("Request-Id", requestID(id))
	return h
}

// anthropicStop is the stop_reason of a neutral finish reason, and
// Converse's stopReason, whose values are the same.
func anthropicStop(f Finish) string {
	switch f {
	case FinishStop:
		return "end_turn"
	case FinishLength:
		return "max_tokens"
	case FinishToolCalls:
		return "tool_use"
	}
	return string(f)
}

// writeAnthropic writes an Anthropic Messages answer: a compact message
// object, or the stream message_start, per content block
// content_block_start / content_block_delta … / content_block_stop (a ping
// after the first start), message_delta and message_stop, each event's
// JSON padded with spaces before its closing brace as Anthropic pads them.
//
// The content is a thinking block (the reasoning, with a signature derived
// from it), a text block, and a tool_use block per call, in that order; a
// text block is also written when there is nothing else.
func writeAnthropic(a *answer, o WriteOptions) Written {
	sig := ""
	if a.Reasoning != "" {
		sig = a.rnd.base64(96)
	}
	if o.Stream {
		return Written{Status: http.StatusOK, Header: anthropicHeader(anthropicStream, a.ID), Events: anthropicEvents(a, sig, false)}
	}
	w := &jsonw{}
	anthropicMessage(w, a)
	w.K("content").Arr()
	if a.Reasoning != "" {
		w.Obj().K("type").Str("thinking").K("thinking").Str(a.Reasoning).K("signature").Str(sig).End()
	}
	if a.Text != "" || len(a.calls) == 0 && a.Reasoning == "" {
		w.Obj().K("type").Str("text").K("text").Str(a.Text).End()
	}
	for _, c := range a.calls {
		toolUse(w, c, c.compact)
	}
	w.End()
	anthropicMessageEnd(w, a, true)
	return Written{Status: http.StatusOK, Header: anthropicHeader(anthropicJSON, a.ID), Body: w.Bytes()}
}

// anthropicMessage opens a message object and writes its members up to
// content.
func anthropicMessage(w *jsonw, a *answer) {
	w.Obj().
		K("model").Str(a.Model).
		K("id").Str(a.ID).
		K("type").Str("message").
		K("role").Str("assistant")
}

// anthropicMessageEnd writes the members after content and closes the
// message; a message_start message (final false) has no stop reason yet
// and counts one output token.
func anthropicMessageEnd(w *jsonw, a *answer, final bool) {
	output := a.Usage.Output
	if final {
		w.K("stop_reason").Str(anthropicStop(a.Finish))
	} else {
		w.K("stop_reason").Null()
		output = min(output, 1)
	}
	w.K("stop_sequence").Null().
		K("stop_details").Null().
		K("usage").Obj().
		K("input_tokens").Int(int64(a.Usage.Input)).
		K("cache_creation_input_tokens").Int(0).
		K("cache_read_input_tokens").Int(0).
		K("cache_creation").Obj().
		K("ephemeral_5m_input_tokens").Int(0).
		K("ephemeral_1h_input_tokens").Int(0).End().
		K("output_tokens").Int(int64(output)).
		K("service_tier").Str("standard").
		K("inference_geo").Str("not_available").
		End().End()
}

// toolUse writes a tool_use block with the given input.
func toolUse(w *jsonw, c call, input []byte) {
	w.Obj().
		K("type").Str("tool_use").
		K("id").Str(c.id).
		K("name").Str(c.name).
		K("input").Raw(input).
		K("caller").Obj().K("type").Str("direct").End().
		End()
}

// anthropicEvents writes the stream events. onBedrock writes them as
// Anthropic on Bedrock streams them (writeInvoke frames each event's Data):
// unpadded, without the ping, and with amazon-bedrock-invocationMetrics in
// message_stop.
func anthropicEvents(a *answer, sig string, onBedrock bool) []Event {
	var evs []Event
	emit := func(name string, doc []byte) {
		if !onBedrock {
			doc = padded(doc, a.rnd.between(0, 15))
		}
		evs = append(evs, sseNamed(name, doc))
	}
	w := &jsonw{}
	w.Obj().K("type").Str("message_start").K("message")
	anthropicMessage(w, a)
	w.K("content").Raw(emptyArrayJSON)
	anthropicMessageEnd(w, a, false)
	emit("message_start", w.End().Bytes())

	index := 0
	block := func(start func(w *jsonw), deltas []func(w *jsonw)) {
		w := &jsonw{}
		w.Obj().K("type").Str("content_block_start").K("index").Int(int64(index)).K("content_block")
		start(w)
		emit("content_block_start", w.End().Bytes())
		if index == 0 && !onBedrock {
			evs = append(evs, anthropicPing())
		}
		for _, d := range deltas {
			w := &jsonw{}
			w.Obj().K("type").Str("content_block_delta").K("index").Int(int64(index)).K("delta")
			d(w)
			emit("content_block_delta", w.End().Bytes())
		}
		w = &jsonw{}
		emit("content_block_stop", w.Obj().K("type").Str("content_block_stop").K("index").Int(int64(index)).End().Bytes())
		index++
	}
	delta := func(typ, key, v string) func(w *jsonw) {
		return func(w *jsonw) { w.Obj().K("type").Str(typ).K(key).Str(v).End() }
	}

	if a.Reasoning != "" {
		var ds []func(w *jsonw)
		for _, p := range a.thinkPieces {
			ds = append(ds, delta("thinking_delta", "thinking", p))
		}
		ds = append(ds, delta("signature_delta", "signature", sig))
		block(func(w *jsonw) {
			w.Obj().K("type").Str("thinking").K("thinking").Str("").K("signature").Str("").End()
		}, ds)
	}
	if a.Text != "" || len(a.calls) == 0 && a.Reasoning == "" {
		var ds []func(w *jsonw)
		for _, p := range a.textPieces {
			ds = append(ds, delta("text_delta", "text", p))
		}
		block(func(w *jsonw) { w.Obj().K("type").Str("text").K("text").Str("").End() }, ds)
	}
	for _, c := range a.calls {
		ds := []func(w *jsonw){delta("input_json_delta", "partial_json", "")}
		for _, frag := range anthropicFragments(string(c.compact), &a.rnd) {
			ds = append(ds, delta("input_json_delta", "partial_json", frag))
		}
		block(func(w *jsonw) { toolUse(w, c, emptyObjectJSON) }, ds)
	}

	w = &jsonw{}
	w.Obj().K("type").Str("message_delta").
		K("delta").Obj().
		K("stop_reason").Str(anthropicStop(a.Finish)).
		K("stop_sequence").Null().
		K("stop_details").Null().End().
		K("usage").Obj().
		K("input_tokens").Int(int64(a.Usage.Input)).
		K("cache_creation_input_tokens").Int(0).
		K("cache_read_input_tokens").Int(0).
		K("output_tokens").Int(int64(a.Usage.Output)).End()
	emit("message_delta", w.End().Bytes())
	if !onBedrock {
		emit("message_stop", []byte(`{"type":"message_stop"}`))
		return evs
	}
	w = &jsonw{}
	w.Obj().K("type").Str("message_stop").K("amazon-bedrock-invocationMetrics").Obj().
		K("inputTokenCount").Int(int64(a.Usage.Input)).
		K("outputTokenCount").Int(int64(a.Usage.Output)).
		K("invocationLatency").Int(0).
		K("firstByteLatency").Int(0).End()
	emit("message_stop", w.End().Bytes())
	return evs
}

// anthropicPing is the ping event, unpadded and spaced as Anthropic sends
// it.
func anthropicPing() Event { return sseNamed("ping", []byte(`{"type": "ping"}`)) }

// anthropicFragments cuts the arguments JSON into input_json_delta
// fragments as Anthropic streams them: the first up to the first colon,
// then pieces of 3 to 11 characters (`{"location":`, ` "Sa`, `n Fran`, …).
// An empty object gives no fragment (the empty first delta says it all).
func anthropicFragments(s string, rnd *prng) []string {
	if s == "{}" {
		return nil
	}
	var out []string
	for i := 0; i < len(s); i++ {
		if s[i] == ':' {
			out = append(out, s[:i+1])
			s = s[i+1:]
			break
		}
	}
	for len(s) > 0 {
		n := rnd.between(3, 11)
		end := 0
		for k := 0; k < n && end < len(s); k++ {
			end += runeLen(s[end:])
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// runeLen is the length in bytes of the first character of s.
func runeLen(s string) int {
	_, n := utf8.DecodeRuneInString(s)
	return n
}
