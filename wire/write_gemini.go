package wire

import "net/http"

// Gemini content types, as the API sends them.
const (
	geminiJSON   = "application/json; charset=UTF-8"
	geminiStream = "text/event-stream"
)

// geminiFinish is the finishReason of a neutral finish reason; Gemini has
// none of its own for tool calls.
func geminiFinish(f Finish) string {
	switch f {
	case FinishStop, FinishToolCalls:
		return "STOP"
	case FinishLength:
		return "MAX_TOKENS"
	}
	return string(f)
}

// geminiPart is one part of a Gemini candidate's content.
type geminiPart struct {
	text    string
	thought bool
	call    *call
	sig     string // thoughtSignature of a functionCall part
}

func (p geminiPart) write(w *jsonw) {
	w.Obj()
	switch {
	case p.call != nil:
		w.K("functionCall").Obj()
		if p.call.id != "" {
			w.K("id").Str(p.call.id)
		}
		w.K("name").Str(p.call.name).K("args").Raw(p.call.compact).End()
		if p.sig != "" {
			w.K("thoughtSignature").Str(p.sig)
		}
	case p.thought:
		w.K("text").Str(p.text).K("thought").Bool(true)
	default:
		w.K("text").Str(p.text)
	}
	w.End()
}

// writeGemini writes a Gemini answer: a GenerateContentResponse indented by
// two spaces with a final newline (generateContent), or a stream of them
// (streamGenerateContent) as SSE "data:" events ended by CRLF CRLF in
// Google's spacing (alt=sse), or as one JSON array "[{…}\n,\r\n{…}\n]".
//
// The parts are the reasoning as thought parts, the text, and a
// functionCall part per call (the first with a thoughtSignature, as
// Gemini 2.5 and later send; no id unless the call has one). A stream sends
// one chunk per thought and text piece, then every call in one chunk; the
// last chunk carries finishReason, and after calls it is a chunk of its own
// with an empty text part, as Gemini 3 ends a call. Every chunk carries the
// usage; Usage.Reasoning is thoughtsTokenCount, omitted when 0.
func writeGemini(a *answer, o WriteOptions) Written {
	var sig string
	if len(a.calls) > 0 {
		sig = a.rnd.base64(96)
	}
	var callParts []geminiPart
	for i := range a.calls {
		p := geminiPart{call: &a.calls[i]}
		if i == 0 {
			p.sig = sig
		}
		callParts = append(callParts, p)
	}
	finish := geminiFinish(a.Finish)
	if !o.Stream {
		var parts []geminiPart
		if a.Reasoning != "" {
			parts = append(parts, geminiPart{text: a.Reasoning, thought: true})
		}
		if a.Text != "" || len(a.calls) == 0 && a.Reasoning == "" {
			parts = append(parts, geminiPart{text: a.Text})
		}
		parts = append(parts, callParts...)
		body := append(indented(geminiChunk(&jsonw{}, a, parts, finish), "  "), '\n')
		return Written{Status: http.StatusOK, Header: header(geminiJSON), Body: body}
	}

	// A chunk per thought and text piece, the calls in one, then, after
	// calls or thoughts (or for nothing), one with an empty text part.
	pieces := len(a.thinkPieces) + len(a.textPieces)
	n := pieces
	if len(callParts) > 0 {
		n++
	}
	if n == 0 || len(callParts) > 0 || len(a.textPieces) == 0 && len(a.thinkPieces) > 0 {
		n++
	}
	var one [1]geminiPart
	parts := func(i int) []geminiPart {
		switch {
		case i < len(a.thinkPieces):
			one[0] = geminiPart{text: a.thinkPieces[i], thought: true}
		case i < pieces:
			one[0] = geminiPart{text: a.textPieces[i-len(a.thinkPieces)]}
		case i == pieces && len(callParts) > 0:
			return callParts
		default:
			one[0] = geminiPart{}
		}
		return one[:]
	}
	// The chunks are laid out side by side in one buffer, each document
	// in memory that serves them all.
	per := 300 // a chunk in Google's spacing, beside its parts
	if o.JSONArray {
		per = 460 // indented
	}
	size := (n + 1) * (per + len(a.ID) + len(a.Model))
	for _, ps := range [][]string{a.thinkPieces, a.textPieces} {
		for _, p := range ps {
			size += 2 * len(p)
		}
	}
	for _, c := range a.calls {
		size += 300 + 2*len(c.compact) + len(sig)
	}
	b := o.buffer(size)
	marks := make([]mark, 0, n+1)
	var w jsonw
	for i := range n {
		f := ""
		if i == n-1 {
			f = finish
		}
		w.reset()
		doc := geminiChunk(&w, a, parts(i), f)
		m := mark{start: len(b)}
		if o.JSONArray {
			b = append(b, arrayLead(i)...)
			m.data = len(b)
			b = appendIndented(b, doc, "  ")
			m.dataEnd = len(b)
			b = append(b, '\n')
		} else {
			b = append(b, "data: "...)
			m.data = len(b)
			b = appendGoogleSpaced(b, doc)
			m.dataEnd = len(b)
			b = append(b, "\r\n\r\n"...)
		}
		marks = append(marks, m)
	}
	h := header(geminiStream)
	if o.JSONArray {
		marks = append(marks, mark{start: len(b), data: -1})
		b = append(b, ']')
		h = header(geminiJSON)
	}
	return Written{Status: http.StatusOK, Header: h, Events: cutEvents(b, marks, o.EventBuffer), joined: b, buffer: b}
}

// geminiChunk writes into w, empty, one GenerateContentResponse with the
// given parts and finishReason ("" for none), and returns it.
func geminiChunk(w *jsonw, a *answer, parts []geminiPart, finish string) []byte {
	w.Obj().K("candidates").Arr().Obj().
		K("content").Obj().K("parts").Arr()
	for _, p := range parts {
		p.write(w)
	}
	w.End().K("role").Str("model").End()
	if finish != "" {
		w.K("finishReason").Str(finish)
	}
	w.K("index").Int(0).End().End()
	thoughts := a.Usage.Reasoning
	w.K("usageMetadata").Obj().
		K("promptTokenCount").Int(int64(a.Usage.Input)).
		K("candidatesTokenCount").Int(int64(a.Usage.Output - thoughts)).
		K("totalTokenCount").Int(int64(a.Usage.Input + a.Usage.Output)).
		K("promptTokensDetails").Arr().Obj().
		K("modality").Str("TEXT").K("tokenCount").Int(int64(a.Usage.Input)).
		End().End()
	if thoughts > 0 {
		w.K("thoughtsTokenCount").Int(int64(thoughts))
	}
	w.End().
		K("modelVersion").Str(a.Model).
		K("responseId").Str(a.ID).
		End()
	return w.Bytes()
}

// sseDataCRLF frames a data-only SSE event ended by CRLF CRLF, as Gemini
// sends them.
func sseDataCRLF(doc []byte) Event {
	raw := make([]byte, 0, len(doc)+10)
	raw = append(raw, "data: "...)
	raw = append(raw, doc...)
	raw = append(raw, "\r\n\r\n"...)
	return Event{Raw: raw, Data: raw[6 : 6+len(doc) : 6+len(doc)]}
}

// arrayLead is what comes before the i-th element of a streamed JSON
// array: "[" or ",\r\n"; an element ends with a newline, and the closing
// "]" is a piece of its own.
func arrayLead(i int) string {
	if i == 0 {
		return "["
	}
	return ",\r\n"
}
