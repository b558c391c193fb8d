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
		body := append(indented(geminiChunk(a, parts, finish), "  "), '\n')
		return Written{Status: http.StatusOK, Header: header(geminiJSON), Body: body}
	}

	var chunks [][]geminiPart
	for _, p := range a.thinkPieces {
		chunks = append(chunks, []geminiPart{{text: p, thought: true}})
	}
	for _, p := range a.textPieces {
		chunks = append(chunks, []geminiPart{{text: p}})
	}
	if len(callParts) > 0 {
		chunks = append(chunks, callParts)
	}
	if n := len(chunks); n == 0 || chunks[n-1][0].call != nil || chunks[n-1][0].thought {
		chunks = append(chunks, []geminiPart{{}})
	}
	var evs []Event
	for i, parts := range chunks {
		f := ""
		if i == len(chunks)-1 {
			f = finish
		}
		doc := geminiChunk(a, parts, f)
		if o.JSONArray {
			evs = append(evs, arrayElement(i, indented(doc, "  ")))
		} else {
			evs = append(evs, sseDataCRLF(googleSpaced(doc)))
		}
	}
	if o.JSONArray {
		evs = append(evs, Event{Raw: []byte("]")})
		return Written{Status: http.StatusOK, Header: header(geminiJSON), Events: evs}
	}
	return Written{Status: http.StatusOK, Header: header(geminiStream), Events: evs}
}

// geminiChunk writes one GenerateContentResponse with the given parts and
// finishReason ("" for none).
func geminiChunk(a *answer, parts []geminiPart, finish string) []byte {
	w := &jsonw{}
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

// arrayElement is the i-th piece of a streamed JSON array: "[" or ",\r\n",
// the element, and a newline; the closing "]" is a piece of its own.
func arrayElement(i int, doc []byte) Event {
	lead := ",\r\n"
	if i == 0 {
		lead = "["
	}
	raw := make([]byte, 0, len(lead)+len(doc)+1)
	raw = append(raw, lead...)
	raw = append(raw, doc...)
	raw = append(raw, '\n')
	return Event{Raw: raw, Data: raw[len(lead) : len(lead)+len(doc) : len(lead)+len(doc)]}
}
