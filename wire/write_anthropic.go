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
		evs, joined := anthropicEvents(a, sig, false, o)
		return Written{Status: http.StatusOK, Header: anthropicHeader(anthropicStream, a.ID), Events: evs, joined: joined, buffer: joined}
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

// anthropicEvents writes the stream events, side by side in one buffer
// (the second result; from o.Buffer when it has room), their list in
// o.EventBuffer when it has room. onBedrock writes them as Anthropic on
// Bedrock streams them (writeInvoke frames each event's Data): unpadded,
// without the ping, and with amazon-bedrock-invocationMetrics in
// message_stop.
func anthropicEvents(a *answer, sig string, onBedrock bool, o WriteOptions) ([]Event, []byte) {
	size, n := 1200, 8
	for _, ps := range [][]string{a.thinkPieces, a.textPieces} {
		for _, p := range ps {
			size += len(p) + 140 // the event's name, members and padding, at most
		}
		n += len(ps)
	}
	for _, c := range a.calls {
		size += 3*len(c.compact) + 600
	}
	s := namedSSE{b: o.buffer(size), marks: make([]mark, 0, n)}
	// w lays out each event's document, in memory that serves them all.
	var w jsonw
	doc := func() *jsonw {
		w.reset()
		return &w
	}
	emit := func(name string, doc []byte) {
		pad := 0
		if !onBedrock {
			pad = a.rnd.between(0, 15)
		}
		s.event(name, doc, pad)
	}
	doc().Obj().K("type").Str("message_start").K("message")
	anthropicMessage(&w, a)
	w.K("content").Raw(emptyArrayJSON)
	anthropicMessageEnd(&w, a, false)
	emit("message_start", w.End().Bytes())

	index := 0
	blockStart := func(start func(w *jsonw)) {
		doc().Obj().K("type").Str("content_block_start").K("index").Int(int64(index)).K("content_block")
		start(&w)
		emit("content_block_start", w.End().Bytes())
		if index == 0 && !onBedrock {
			s.event("ping", anthropicPingData, 0)
		}
	}
	delta := func(typ, key, v string) {
		doc().Obj().K("type").Str("content_block_delta").K("index").Int(int64(index)).K("delta").
			Obj().K("type").Str(typ).K(key).Str(v).End()
		emit("content_block_delta", w.End().Bytes())
	}
	blockStop := func() {
		emit("content_block_stop", doc().Obj().K("type").Str("content_block_stop").K("index").Int(int64(index)).End().Bytes())
		index++
	}

	if a.Reasoning != "" {
		blockStart(func(w *jsonw) {
			w.Obj().K("type").Str("thinking").K("thinking").Str("").K("signature").Str("").End()
		})
		for _, p := range a.thinkPieces {
			delta("thinking_delta", "thinking", p)
		}
		delta("signature_delta", "signature", sig)
		blockStop()
	}
	if a.Text != "" || len(a.calls) == 0 && a.Reasoning == "" {
		blockStart(func(w *jsonw) { w.Obj().K("type").Str("text").K("text").Str("").End() })
		for _, p := range a.textPieces {
			delta("text_delta", "text", p)
		}
		blockStop()
	}
	for _, c := range a.calls {
		// The fragments draw from a.rnd before the block's events do.
		frags := anthropicFragments(string(c.compact), &a.rnd)
		blockStart(func(w *jsonw) { toolUse(w, c, emptyObjectJSON) })
		delta("input_json_delta", "partial_json", "")
		for _, frag := range frags {
			delta("input_json_delta", "partial_json", frag)
		}
		blockStop()
	}

	doc().Obj().K("type").Str("message_delta").
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
		return s.events(o.EventBuffer), s.b
	}
	doc().Obj().K("type").Str("message_stop").K("amazon-bedrock-invocationMetrics").Obj().
		K("inputTokenCount").Int(int64(a.Usage.Input)).
		K("outputTokenCount").Int(int64(a.Usage.Output)).
		K("invocationLatency").Int(0).
		K("firstByteLatency").Int(0).End()
	emit("message_stop", w.End().Bytes())
	return s.events(o.EventBuffer), s.b
}

// anthropicPingData is the data of the ping event, unpadded and spaced as
// Anthropic sends it.
var anthropicPingData = []byte(`{"type": "ping"}`)

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
