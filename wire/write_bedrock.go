package wire

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"
)

// Bedrock Converse content types, as the service sends them.
const (
	converseJSON   = "application/json"
	converseStream = "application/vnd.amazon.eventstream"
)

// converseHeader is Content-Type and the request id Bedrock sends with
// every answer (x-amzn-RequestId, a UUID), derived from the answer's id.
func converseHeader(contentType, id string) http.Header {
	h := header(contentType)
	sum := sha256.Sum256([]byte("bedrock-request-id\x00" + id))
	x := hex.EncodeToString(sum[:16])
	h.Set("X-Amzn-Requestid", x[:8]+"-"+x[8:12]+"-"+x[12:16]+"-"+x[16:20]+"-"+x[20:32])
	return h
}

// writeConverse writes a Bedrock Converse answer: the whole
// {"output":{"message":…},"stopReason","usage","metrics"} object, or the
// ConverseStream event stream: messageStart, per content block its
// contentBlockStart (tool use only), contentBlockDelta … and
// contentBlockStop, then messageStop and metadata, each message framed as
// AWS event stream (DecodeEventStream) with the :event-type,
// :content-type and :message-type headers, and each payload padded with
// Bedrock's "p" member.
//
// The content is a reasoningContent block (the reasoning, with a signature
// derived from it), a text block, and a toolUse block per call, in that
// order; a text block is also written when there is nothing else.
func writeConverse(a *answer, o WriteOptions) Written {
	sig := ""
	if a.Reasoning != "" {
		sig = a.rnd.base64(96)
	}
	if o.Stream {
		return Written{Status: http.StatusOK, Header: converseHeader(converseStream, a.ID), Events: converseEvents(a, sig)}
	}
	w := &jsonw{}
	w.Obj().K("metrics").Obj().K("latencyMs").Int(0).End().
		K("output").Obj().K("message").Obj().K("content").Arr()
	if a.Reasoning != "" {
		w.Obj().K("reasoningContent").Obj().K("reasoningText").Obj().
			K("text").Str(a.Reasoning).K("signature").Str(sig).End().End().End()
	}
	if a.Text != "" || len(a.calls) == 0 && a.Reasoning == "" {
		w.Obj().K("text").Str(a.Text).End()
	}
	for _, c := range a.calls {
		w.Obj().K("toolUse").Obj().K("input").Raw(c.compact).K("name").Str(c.name).K("toolUseId").Str(c.id).End().End()
	}
	w.End().K("role").Str("assistant").End().End().
		K("stopReason").Str(anthropicStop(a.Finish))
	converseUsage(w, a)
	return Written{Status: http.StatusOK, Header: converseHeader(converseJSON, a.ID), Body: w.End().Bytes()}
}

// converseUsage writes the usage member.
func converseUsage(w *jsonw, a *answer) {
	w.K("usage").Obj().
		K("inputTokens").Int(int64(a.Usage.Input)).
		K("outputTokens").Int(int64(a.Usage.Output)).
		K("totalTokens").Int(int64(a.Usage.Input + a.Usage.Output)).End()
}

// converseEvents writes the ConverseStream messages.
func converseEvents(a *answer, sig string) []Event {
	var evs []Event
	emit := func(typ string, w *jsonw) {
		evs = append(evs, bedrockEvent(typ, w.K("p").Str(a.rnd.alnum(a.rnd.between(1, 40))).End().Bytes()))
	}
	emit("messageStart", (&jsonw{}).Obj().K("role").Str("assistant"))
	index := 0
	delta := func(body func(w *jsonw)) {
		w := (&jsonw{}).Obj().K("contentBlockIndex").Int(int64(index)).K("delta").Obj()
		body(w)
		emit("contentBlockDelta", w.End())
	}
	stop := func() {
		emit("contentBlockStop", (&jsonw{}).Obj().K("contentBlockIndex").Int(int64(index)))
		index++
	}
	if a.Reasoning != "" {
		for _, p := range a.thinkPieces {
			delta(func(w *jsonw) { w.K("reasoningContent").Obj().K("text").Str(p).End() })
		}
		delta(func(w *jsonw) { w.K("reasoningContent").Obj().K("signature").Str(sig).End() })
		stop()
	}
	if a.Text != "" || len(a.calls) == 0 && a.Reasoning == "" {
		for _, p := range a.textPieces {
			delta(func(w *jsonw) { w.K("text").Str(p) })
		}
		stop()
	}
	for _, c := range a.calls {
		emit("contentBlockStart", (&jsonw{}).Obj().K("contentBlockIndex").Int(int64(index)).
			K("start").Obj().K("toolUse").Obj().K("name").Str(c.name).K("toolUseId").Str(c.id).End().End())
		for _, frag := range tokens(string(c.compact)) {
			delta(func(w *jsonw) { w.K("toolUse").Obj().K("input").Str(frag).End() })
		}
		stop()
	}
	emit("messageStop", (&jsonw{}).Obj().K("stopReason").Str(anthropicStop(a.Finish)))
	w := (&jsonw{}).Obj().K("metrics").Obj().K("latencyMs").Int(0).End()
	converseUsage(w, a)
	emit("metadata", w)
	return evs
}

// bedrockEvent frames payload as a Bedrock event stream message of event
// type typ (:content-type application/json, :message-type event). Event's
// Data is the payload.
func bedrockEvent(typ string, payload []byte) Event {
	raw, _ := EncodeEventStream([]EventStreamHeader{
		StringHeader(":event-type", typ), StringHeader(":content-type", "application/json"), StringHeader(":message-type", "event"),
	}, payload) // within every limit: three short headers, a payload of one answer's event
	return Event{Raw: raw, Name: typ, Data: raw[len(raw)-4-len(payload) : len(raw)-4]}
}

// invokeAnthropic reports whether an InvokeModel request body is an
// Anthropic Messages one (it carries anthropic_version), the only
// InvokeModel body writeInvoke answers. A nil body (no request) counts as
// one.
func invokeAnthropic(body []byte) bool {
	return body == nil || gjson.GetBytes(body, "anthropic_version").Exists()
}

// writeInvoke writes an InvokeModel answer for an Anthropic model on
// Bedrock. Whole, it is the Anthropic Messages body (writeAnthropic's) with
// Bedrock's headers: x-amzn-RequestId and the X-Amzn-Bedrock-* token
// counts. Streamed (InvokeModelWithResponseStream), each Anthropic stream
// event's JSON, unpadded, is the base64 "bytes" of a "chunk" event stream
// message, {"bytes":…,"p":…}; Bedrock sends no ping, and its message_stop
// carries amazon-bedrock-invocationMetrics.
func writeInvoke(a *answer, o WriteOptions) Written {
	if !o.Stream {
		whole := writeAnthropic(a, WriteOptions{})
		h := converseHeader(converseJSON, a.ID)
		h.Set("X-Amzn-Bedrock-Input-Token-Count", strconv.Itoa(a.Usage.Input))
		h.Set("X-Amzn-Bedrock-Output-Token-Count", strconv.Itoa(a.Usage.Output))
		h.Set("X-Amzn-Bedrock-Invocation-Latency", "0")
		return Written{Status: http.StatusOK, Header: h, Body: whole.Body}
	}
	sig := ""
	if a.Reasoning != "" {
		sig = a.rnd.base64(96)
	}
	var evs []Event
	for _, ev := range anthropicEvents(a, sig, true) {
		w := (&jsonw{}).Obj().K("bytes").Str(base64.StdEncoding.EncodeToString(ev.Data)).
			K("p").Str(a.rnd.alnum(a.rnd.between(1, 40))).End()
		evs = append(evs, bedrockEvent("chunk", w.Bytes()))
	}
	h := converseHeader(converseStream, a.ID)
	h.Set("X-Amzn-Bedrock-Content-Type", "application/json")
	return Written{Status: http.StatusOK, Header: h, Events: evs}
}
