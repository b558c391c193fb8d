package wire

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
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
		// The frames are laid out side by side in one buffer.
		n := len(a.thinkPieces) + len(a.textPieces) + 8
		size := 200 * n
		for _, ps := range [][]string{a.thinkPieces, a.textPieces} {
			for _, p := range ps {
				size += 2 * len(p)
			}
		}
		for _, c := range a.calls {
			n += len(c.compact)
			size += 300 + 150*len(c.compact)
		}
		b, marks := o.buffer(size), make([]mark, 0, n)
		converseEvents(a, sig, func(typ string, w *jsonw) {
			pad := a.rnd.between(1, 40)
			w.K("p").StrOf(func(b []byte) []byte { return a.rnd.appendAlnum(b, pad) })
			m := mark{name: typ, start: len(b)}
			b, m.data = appendEventFrame(b, typ, w.End().Bytes())
			m.dataEnd = len(b) - 4
			marks = append(marks, m)
		})
		return Written{Status: http.StatusOK, Header: converseHeader(converseStream, a.ID), Events: cutEvents(b, marks, o.EventBuffer), joined: b, buffer: b}
	}
	w := &jsonw{}
	w.Obj().K("metrics").Obj().K("latencyMs").Int(0).End()
	return Written{Status: http.StatusOK, Header: converseHeader(converseJSON, a.ID), Body: converseWhole(w, a, sig).End().Bytes()}
}

// converseWhole writes the members output, stopReason and usage of a
// whole Converse answer (Nova's InvokeModel answer has the same) into the
// open object w.
func converseWhole(w *jsonw, a *answer, sig string) *jsonw {
	w.K("output").Obj().K("message").Obj().K("content").Arr()
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
	return w
}

// converseUsage writes the usage member.
func converseUsage(w *jsonw, a *answer) {
	w.K("usage").Obj().
		K("inputTokens").Int(int64(a.Usage.Input)).
		K("outputTokens").Int(int64(a.Usage.Output)).
		K("totalTokens").Int(int64(a.Usage.Input + a.Usage.Output)).End()
}

// converseEvents calls emit with each ConverseStream event, its type and
// its JSON object still open, laid out in memory that serves them all:
// emit must not keep it.
func converseEvents(a *answer, sig string, emit func(typ string, w *jsonw)) {
	var w jsonw
	doc := func() *jsonw {
		w.reset()
		return w.Obj()
	}
	emit("messageStart", doc().K("role").Str("assistant"))
	index := 0
	delta := func() *jsonw { return doc().K("contentBlockIndex").Int(int64(index)).K("delta").Obj() }
	stop := func() {
		emit("contentBlockStop", doc().K("contentBlockIndex").Int(int64(index)))
		index++
	}
	if a.Reasoning != "" {
		for _, p := range a.thinkPieces {
			emit("contentBlockDelta", delta().K("reasoningContent").Obj().K("text").Str(p).End().End())
		}
		emit("contentBlockDelta", delta().K("reasoningContent").Obj().K("signature").Str(sig).End().End())
		stop()
	}
	if a.Text != "" || len(a.calls) == 0 && a.Reasoning == "" {
		for _, p := range a.textPieces {
			emit("contentBlockDelta", delta().K("text").Str(p).End())
		}
		stop()
	}
	for _, c := range a.calls {
		emit("contentBlockStart", doc().K("contentBlockIndex").Int(int64(index)).
			K("start").Obj().K("toolUse").Obj().K("name").Str(c.name).K("toolUseId").Str(c.id).End().End())
		for _, frag := range tokens(string(c.compact)) {
			emit("contentBlockDelta", delta().K("toolUse").Obj().K("input").Str(frag).End().End())
		}
		stop()
	}
	emit("messageStop", doc().K("stopReason").Str(anthropicStop(a.Finish)))
	converseUsage(doc().K("metrics").Obj().K("latencyMs").Int(0).End(), a)
	emit("metadata", &w)
}

// invokeWriters are the InvokeModel answers written, by the request
// body's family (invokeFamily).
var invokeWriters = map[string]func(*answer, WriteOptions) Written{
	familyAnthropic: writeInvokeAnthropic,
	familyNova:      writeInvokeNova,
	familyTitan:     writeInvokeTitan,
	familyLlama:     writeInvokeLlama,
}

// invokeBodyFamily returns the family of an InvokeModel request body,
// Anthropic's for a nil body (no request), and an ErrUnsupported error
// for a body of none of the families Write answers.
func invokeBodyFamily(body []byte) (string, error) {
	if body == nil {
		return familyAnthropic, nil
	}
	f := invokeFamily(gjson.ParseBytes(body))
	if f == "" {
		return "", fmt.Errorf("write %s answer: %w: the body is none of the InvokeModel bodies answered: Anthropic Messages (anthropic_version), Amazon Nova (messages), Amazon Titan Text (inputText), Meta Llama (prompt)", KindBedrockInvoke, ErrUnsupported)
	}
	return f, nil
}

// writeInvoke writes an InvokeModel answer in the shape of the model
// family the request body is of (invokeBodyFamily; Write checked it).
func writeInvoke(a *answer, o WriteOptions) Written {
	f, _ := invokeBodyFamily(o.Request)
	w := invokeWriters[f](a, o)
	if w.Events != nil {
		w.Header.Set("X-Amzn-Bedrock-Content-Type", "application/json")
	} else {
		w.Header.Set("X-Amzn-Bedrock-Input-Token-Count", strconv.Itoa(a.Usage.Input))
		w.Header.Set("X-Amzn-Bedrock-Output-Token-Count", strconv.Itoa(a.Usage.Output))
		w.Header.Set("X-Amzn-Bedrock-Invocation-Latency", "0")
	}
	return w
}

// invokeStream frames each of a model's stream events (JSON documents) as
// the base64 "bytes" of a "chunk" event stream message, {"bytes":…,"p":…},
// as InvokeModelWithResponseStream sends them.
//
// The frames are laid out side by side in one buffer, each payload in
// memory that serves them all.
func invokeStream(a *answer, docs [][]byte) Written {
	size := 0
	for _, d := range docs {
		size += 4*len(d)/3 + 200
	}
	b, marks := make([]byte, 0, size), make([]mark, 0, len(docs))
	var w jsonw
	for _, d := range docs {
		pad := a.rnd.between(1, 40)
		w.reset()
		w.Obj().K("bytes").StrOf(func(b []byte) []byte { return base64.StdEncoding.AppendEncode(b, d) }).
			K("p").StrOf(func(b []byte) []byte { return a.rnd.appendAlnum(b, pad) }).End()
		m := mark{name: "chunk", start: len(b)}
		b, m.data = appendEventFrame(b, "chunk", w.Bytes())
		m.dataEnd = len(b) - 4
		marks = append(marks, m)
	}
	return Written{Status: http.StatusOK, Header: converseHeader(converseStream, a.ID), Events: cutEvents(b, marks, nil), joined: b, buffer: b}
}

// invocationMetrics writes amazon-bedrock-invocationMetrics, which the
// last event of every model's stream carries.
func invocationMetrics(w *jsonw, a *answer) *jsonw {
	return w.K("amazon-bedrock-invocationMetrics").Obj().
		K("inputTokenCount").Int(int64(a.Usage.Input)).K("outputTokenCount").Int(int64(a.Usage.Output)).
		K("invocationLatency").Int(0).K("firstByteLatency").Int(0).End()
}

// writeInvokeAnthropic writes an InvokeModel answer for an Anthropic model
// on Bedrock. Whole, it is the Anthropic Messages body (writeAnthropic's)
// with Bedrock's headers: x-amzn-RequestId and the X-Amzn-Bedrock-* token
// counts. Streamed (InvokeModelWithResponseStream), each Anthropic stream
// event's JSON, unpadded, is a chunk's bytes; Bedrock sends no ping, and
// its message_stop carries amazon-bedrock-invocationMetrics.
func writeInvokeAnthropic(a *answer, o WriteOptions) Written {
	if !o.Stream {
		whole := writeAnthropic(a, WriteOptions{})
		return Written{Status: http.StatusOK, Header: converseHeader(converseJSON, a.ID), Body: whole.Body}
	}
	sig := ""
	if a.Reasoning != "" {
		sig = a.rnd.base64(96)
	}
	evs, _ := anthropicEvents(a, sig, true, WriteOptions{})
	docs := make([][]byte, 0, len(evs))
	for _, ev := range evs {
		docs = append(docs, ev.Data)
	}
	return invokeStream(a, docs)
}

// writeInvokeNova writes an InvokeModel answer for an Amazon Nova model:
// whole, Converse's output, stopReason and usage; streamed, each
// ConverseStream event wrapped in a member naming it
// ({"contentBlockDelta":{…}}) as a chunk's bytes, the metadata event
// carrying amazon-bedrock-invocationMetrics beside it.
func writeInvokeNova(a *answer, o WriteOptions) Written {
	sig := ""
	if a.Reasoning != "" {
		sig = a.rnd.base64(96)
	}
	if !o.Stream {
		w := (&jsonw{}).Obj()
		return Written{Status: http.StatusOK, Header: converseHeader(converseJSON, a.ID), Body: converseWhole(w, a, sig).End().Bytes()}
	}
	var docs [][]byte
	converseEvents(a, sig, func(typ string, ev *jsonw) {
		w := (&jsonw{}).Obj().K(typ).Raw(ev.End().Bytes())
		if typ == "metadata" {
			invocationMetrics(w, a)
		}
		docs = append(docs, w.End().Bytes())
	})
	return invokeStream(a, docs)
}

// writeInvokeTitan writes an InvokeModel answer for an Amazon Titan Text
// model: whole, {"inputTextTokenCount","results":[{"tokenCount",
// "outputText","completionReason"}]}; streamed, a chunk per text piece
// {"outputText","index":0,"totalOutputTextTokenCount","completionReason",
// "inputTextTokenCount"}, the counts and reason null but on the last, which
// also carries amazon-bedrock-invocationMetrics. Titan carries no tool
// calls and no reasoning (Write refuses calls; reasoning is left out).
func writeInvokeTitan(a *answer, o WriteOptions) Written {
	reason := "FINISH"
	if a.Finish == FinishLength {
		reason = "LENGTH"
	}
	if !o.Stream {
		w := (&jsonw{}).Obj().K("inputTextTokenCount").Int(int64(a.Usage.Input)).
			K("results").Arr().Obj().K("tokenCount").Int(int64(a.Usage.Output)).
			K("outputText").Str(a.Text).K("completionReason").Str(reason).End().End()
		return Written{Status: http.StatusOK, Header: converseHeader(converseJSON, a.ID), Body: w.End().Bytes()}
	}
	pieces := textPieces(a)
	docs := make([][]byte, len(pieces))
	for i, p := range pieces {
		w := (&jsonw{}).Obj().K("outputText").Str(p).K("index").Int(0)
		if i < len(pieces)-1 {
			w.K("totalOutputTextTokenCount").Null().K("completionReason").Null().K("inputTextTokenCount").Null()
		} else {
			w.K("totalOutputTextTokenCount").Int(int64(a.Usage.Output)).K("completionReason").Str(reason).
				K("inputTextTokenCount").Int(int64(a.Usage.Input))
			invocationMetrics(w, a)
		}
		docs[i] = w.End().Bytes()
	}
	return invokeStream(a, docs)
}

// writeInvokeLlama writes an InvokeModel answer for a Meta Llama model:
// whole, {"generation","prompt_token_count","generation_token_count",
// "stop_reason"}; streamed, a chunk per text piece with the same members,
// the prompt's count on the first only, the generation's counted so far,
// stop_reason null but on the last, which also carries
// amazon-bedrock-invocationMetrics. Llama carries no tool calls and no
// reasoning (Write refuses calls; reasoning is left out).
func writeInvokeLlama(a *answer, o WriteOptions) Written {
	reason := "stop"
	if a.Finish == FinishLength {
		reason = "length"
	}
	if !o.Stream {
		w := (&jsonw{}).Obj().K("generation").Str(a.Text).K("prompt_token_count").Int(int64(a.Usage.Input)).
			K("generation_token_count").Int(int64(a.Usage.Output)).K("stop_reason").Str(reason)
		return Written{Status: http.StatusOK, Header: converseHeader(converseJSON, a.ID), Body: w.End().Bytes()}
	}
	pieces := textPieces(a)
	docs := make([][]byte, len(pieces))
	for i, p := range pieces {
		w := (&jsonw{}).Obj().K("generation").Str(p)
		if i == 0 {
			w.K("prompt_token_count").Int(int64(a.Usage.Input))
		} else {
			w.K("prompt_token_count").Null()
		}
		// The generation's count so far, reaching the usage's on the last.
		w.K("generation_token_count").Int(int64(a.Usage.Output * (i + 1) / len(pieces)))
		if i < len(pieces)-1 {
			w.K("stop_reason").Null()
		} else {
			w.K("stop_reason").Str(reason)
			invocationMetrics(w, a)
		}
		docs[i] = w.End().Bytes()
	}
	return invokeStream(a, docs)
}

// textPieces are the text's stream pieces, one empty piece for no text.
func textPieces(a *answer) []string {
	if len(a.textPieces) == 0 {
		return []string{""}
	}
	return a.textPieces
}
