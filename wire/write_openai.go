package wire

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
)

// OpenAI content types, as the API sends them.
const (
	openAIJSON   = "application/json"
	openAIStream = "text/event-stream; charset=utf-8"
)

// openAIHeader is Content-Type and the x-request-id OpenAI sends with every
// answer.
func openAIHeader(contentType, id string) http.Header {
	v := []string{contentType, requestID(id)} // one array for both values
	return http.Header{"Content-Type": v[0:1:1], "X-Request-Id": v[1:2:2]}
}

// fingerprint is a system_fingerprint ("fp_" and 10 hex digits) derived
// from the model, as OpenAI's names the backend configuration.
func fingerprint(model string) string {
	var b [13]byte
	return string(appendFingerprint(b[:0], model))
}

// appendFingerprint appends fingerprint(model) to dst.
func appendFingerprint(dst []byte, model string) []byte {
	var buf [64]byte
	sum := sha256.Sum256(append(append(buf[:0], "fingerprint\x00"...), model...))
	dst = append(dst, "fp_"...)
	return hex.AppendEncode(dst, sum[:5])
}

// chatFinish is the chat finish_reason of a neutral one.
func chatFinish(f Finish) string {
	if f == FinishToolCalls {
		return "tool_calls"
	}
	return string(f) // "stop", "length"
}

// chatUsage writes a chat usage object.
func chatUsage(w *jsonw, a *answer) {
	w.Obj().
		K("prompt_tokens").Int(int64(a.Usage.Input)).
		K("completion_tokens").Int(int64(a.Usage.Output)).
		K("total_tokens").Int(int64(a.Usage.Input + a.Usage.Output)).
		K("prompt_tokens_details").Obj().K("cached_tokens").Int(0).K("audio_tokens").Int(0).End().
		K("completion_tokens_details").Obj().
		K("reasoning_tokens").Int(int64(a.Usage.Reasoning)).
		K("audio_tokens").Int(0).
		K("accepted_prediction_tokens").Int(0).
		K("rejected_prediction_tokens").Int(0).End().
		End()
}

// writeChat writes an OpenAI Chat Completions answer: a chat.completion
// object indented by two spaces with a final newline, or a stream of
// chat.completion.chunk events ending in "data: [DONE]".
func writeChat(a *answer, o WriteOptions) Written {
	if o.Stream {
		evs, joined := chatStream(a, o)
		return Written{Status: http.StatusOK, Header: openAIHeader(openAIStream, a.ID), Events: evs, joined: joined, buffer: joined}
	}
	// The document, indented, is about 1 100 bytes beside what the
	// answer says.
	size := 1100 + len(a.ID) + len(a.Model) + len(a.Text) + len(a.Reasoning)
	for _, c := range a.calls {
		size += 230 + len(c.id) + len(c.name) + 2*len(c.args)
	}
	w := &jsonw{b: o.buffer(size), indent: "  "}
	w.Obj().
		K("id").Str(a.ID).
		K("object").Str("chat.completion").
		K("created").Int(a.created()).
		K("model").Str(a.Model).
		K("choices").Arr().Obj().
		K("index").Int(0).
		K("message").Obj().K("role").Str("assistant")
	if a.Text == "" && len(a.calls) > 0 {
		w.K("content").Null()
	} else {
		w.K("content").Str(a.Text)
	}
	if a.Reasoning != "" {
		w.K("reasoning_content").Str(a.Reasoning)
	}
	if len(a.calls) > 0 {
		w.K("tool_calls").Arr()
		for _, c := range a.calls {
			w.Obj().K("id").Str(c.id).K("type").Str("function").
				K("function").Obj().K("name").Str(c.name).K("arguments").Str(c.args).End().
				End()
		}
		w.End()
	}
	w.K("refusal").Null().K("annotations").Raw(emptyArrayJSON).End()
	w.K("logprobs").Null().K("finish_reason").Str(chatFinish(a.Finish)).End().End()
	w.K("usage")
	chatUsage(w, a)
	w.K("service_tier").Str("default").K("system_fingerprint").Str(fingerprint(a.Model)).End()
	body := append(w.Bytes(), '\n')
	return Written{Status: http.StatusOK, Header: openAIHeader(openAIJSON, a.ID), Body: body, buffer: body}
}

// chatStream writes the chunks of a chat stream as gpt-4o-mini sends them:
// the role chunk (content "" before text, null before a tool call, whose
// id, name and empty arguments it then carries), reasoning_content and
// content pieces, per call a chunk with its index, id and name and then
// its argument fragments, the finish chunk with an empty delta, the usage
// chunk when asked for, and "data: [DONE]".
func chatStream(a *answer, o WriteOptions) (evs []Event, joined []byte) {
	merged := a.Text == "" && a.Reasoning == "" && len(a.calls) > 0
	// The events and their pieces are counted first, so that the buffer
	// every event is laid out in ("data: " document "\n\n") and the list of
	// their ends are sized once; the events are cut from it once it is
	// whole.
	frags := make([][]string, len(a.calls))
	n := 2 // the role and finish chunks
	// Beside its head, an event takes about 100 bytes (the choice's
	// members, the padding, the framing) and what its delta says: a
	// piece, a tool call's header, an argument fragment (escaped).
	delta := 64 // the role's
	for _, p := range a.thinkPieces {
		n, delta = n+1, delta+len(p)+24
	}
	for _, p := range a.textPieces {
		n, delta = n+1, delta+len(p)+12
	}
	for i, c := range a.calls {
		frags[i] = tokens(c.args)
		n += len(frags[i])
		delta += 120 + len(c.id) + len(c.name) + 56*len(frags[i]) + 2*len(c.args)
		if i > 0 || !merged {
			n++
		}
	}
	if o.IncludeUsage {
		n++
		delta += n*len(`,"usage":null`) + 400
	}
	ends := make([]int, 0, n+1)
	// Every chunk opens with the same members, laid out once.
	head := make([]byte, 0, 176+len(a.ID)+len(a.Model)) // 164 beside the two, unescaped
	head = append(head, `data: {"id":`...)
	head = appendString(head, a.ID)
	head = append(head, `,"object":"chat.completion.chunk","created":`...)
	head = strconv.AppendInt(head, a.created(), 10)
	head = append(head, `,"model":`...)
	head = appendString(head, a.Model)
	head = append(head, `,"service_tier":"default","system_fingerprint":"`...)
	head = append(appendFingerprint(head, a.Model), `","choices":[`...)
	// w stays on the stack (nothing it is handed keeps it), so that laying
	// out the events writes no pointer to the heap.
	w := jsonw{b: o.buffer(n*(len(head)+100) + delta + len("data: [DONE]\n\n"))}
	// An event is its head, then for a choice its delta (start, the
	// members, choice) and the rest (end).
	end := func(usage bool) {
		switch {
		case !o.IncludeUsage:
			w.b = append(w.b, ']')
		case usage:
			w.b = append(w.b, `],"usage":`...)
			chatUsage(&w, a)
		default:
			w.b = append(w.b, `],"usage":null`...)
		}
		if o.Obfuscation {
			w.b = append(w.b, `,"obfuscation":"`...) // letters and digits need no escape
			w.b = append(a.rnd.appendAlnum(w.b, a.rnd.between(3, 15)), '"')
		}
		w.b = append(w.b, '}')
		w.b = append(w.b, "\n\n"...)
		ends = append(ends, len(w.b))
	}
	start := func() {
		w.b = append(w.b, head...)
		w.b = append(w.b, `{"index":0,"delta":{`...)
		w.closers = append(w.closers, '}')
		w.started = append(w.started, false)
	}
	choice := func(finish string) {
		w.End()
		w.b = append(w.b, `,"logprobs":null,"finish_reason":`...)
		w.StrOrNull(finish)
		w.b = append(w.b, '}')
		end(false)
	}
	callHeader := func(i int) {
		c := a.calls[i]
		w.K("tool_calls").Arr().Obj().
			K("index").Int(int64(i)).K("id").Str(c.id).K("type").Str("function").
			K("function").Obj().K("name").Str(c.name).K("arguments").Str("").End().
			End().End()
	}
	start()
	w.K("role").Str("assistant")
	if merged {
		w.K("content").Null()
		callHeader(0)
	} else {
		w.K("content").Str("")
	}
	w.K("refusal").Null()
	choice("")
	// Most events carry a piece of text: laid out in runs of constant
	// bytes, without w's bookkeeping (the bytes start, K, Str and choice
	// would write).
	piece := func(key, p string) {
		w.b = append(w.b, head...)
		w.b = append(w.b, `{"index":0,"delta":{`...)
		w.b = append(w.b, key...)
		w.b = appendString(w.b, p)
		w.b = append(w.b, `},"logprobs":null,"finish_reason":null}`...)
		end(false)
	}
	for _, p := range a.thinkPieces {
		piece(`"reasoning_content":`, p)
	}
	for _, p := range a.textPieces {
		piece(`"content":`, p)
	}
	for i := range a.calls {
		if i > 0 || !merged {
			start()
			callHeader(i)
			choice("")
		}
		for _, frag := range frags[i] {
			start()
			w.K("tool_calls").Arr().Obj().K("index").Int(int64(i)).
				K("function").Obj().K("arguments").Str(frag).End().End().End()
			choice("")
		}
	}
	start()
	choice(chatFinish(a.Finish))
	if o.IncludeUsage {
		w.b = append(w.b, head...)
		end(true)
	}
	w.b = append(w.b, "data: [DONE]\n\n"...)
	ends = append(ends, len(w.b))
	return sseDataEvents(w.b, ends, o.EventBuffer), w.b
}

// writeEmbeddings writes an OpenAI embeddings list holding the answer's
// vector, indented by two spaces with a final newline as OpenAI sends it;
// usage counts the input tokens.
func writeEmbeddings(a Answer, o WriteOptions) (Written, error) {
	if a.Usage.Input < 0 {
		return Written{}, fmt.Errorf("write %s answer: %w: usage %d input tokens", KindEmbeddings, ErrInvalidAnswer, a.Usage.Input)
	}
	w := &jsonw{}
	w.Obj().K("object").Str("list").
		K("data").Arr().Obj().
		K("object").Str("embedding").
		K("index").Int(0).
		K("embedding")
	if o.Base64 {
		raw := make([]byte, 0, 4*len(a.Embedding))
		for i, v := range a.Embedding {
			f := float32(v)
			if math.IsNaN(v) || math.IsInf(float64(f), 0) {
				return Written{}, fmt.Errorf("write %s answer: %w: embedding[%d] = %v", KindEmbeddings, ErrInvalidAnswer, i, v)
			}
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(f))
		}
		w.Str(base64.StdEncoding.EncodeToString(raw))
	} else {
		w.Arr()
		for i, v := range a.Embedding {
			num, err := json.Marshal(v)
			if err != nil {
				return Written{}, fmt.Errorf("write %s answer: %w: embedding[%d] = %v", KindEmbeddings, ErrInvalidAnswer, i, v)
			}
			w.Raw(num)
		}
		w.End()
	}
	w.End().End().
		K("model").Str(a.Model).
		K("usage").Obj().
		K("prompt_tokens").Int(int64(a.Usage.Input)).
		K("total_tokens").Int(int64(a.Usage.Input)).
		End().End()
	body := append(indented(w.Bytes(), "  "), '\n')
	return Written{Status: http.StatusOK, Header: openAIHeader(openAIJSON, a.ID), Body: body}, nil
}
