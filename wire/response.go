package wire

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Response is what a response body says, in provider-neutral terms.
type Response struct {
	// Text is the answer text, streamed deltas joined. Thoughts (Gemini
	// thought parts, Anthropic thinking blocks) are not text.
	Text string
	// Reasoning is the thinking or reasoning text, streamed deltas joined:
	// Anthropic thinking blocks, Gemini thought parts, Responses reasoning
	// summaries (several parts joined by a blank line; reasoning_text
	// content when there is no summary), chat reasoning_content (or
	// reasoning), Ollama message.thinking.
	Reasoning string
	// ToolCalls is the function calls made, in the order they began.
	ToolCalls []ToolCall
	// Stop is the finish or stop reason (finish_reason, stop_reason,
	// finishReason, done_reason; for Responses the incomplete reason, else
	// the status), "" if none was sent.
	Stop string
	// Finish is Stop in provider-neutral terms: FinishStop, FinishLength or
	// FinishToolCalls. Where the wire has no reason of its own for tool calls
	// (Gemini STOP, Ollama stop, Responses completed), an answer that calls
	// tools reads as FinishToolCalls. A reason with no neutral equivalent
	// (content_filter, SAFETY, refusal, failed) is carried as the provider
	// spelled it; "" when no reason was sent.
	Finish Finish
	// Usage is the token count the provider reported last (OpenAI chat
	// streams carry it only when stream_options.include_usage is set).
	// Output counts every generated token, reasoning included: Gemini's
	// candidatesTokenCount plus thoughtsTokenCount. Reasoning is read where
	// the wire counts it (reasoning_tokens, thoughtsTokenCount), else 0.
	// Input counts the whole prompt, cached or not: Anthropic's
	// input_tokens plus cache_creation_input_tokens and
	// cache_read_input_tokens (the other wires count it so already); Cached
	// is the part of it read from the cache.
	Usage Usage
	// Model is the model the provider says answered (model, Responses
	// response.model, Anthropic message.model, Gemini modelVersion): often a
	// dated snapshot of the model asked for. "" when the answer names none.
	Model string
	// Error is the error the provider sent, in the body or mid-stream, as
	// "type: message" (or just the message when it has no type); "" if none.
	Error string
	// ResponseID is the id of a Responses answer (the one a later request
	// names in previous_response_id); "" on the other wires.
	ResponseID string
}

// ParseResponse reads a response body of the given kind and framing,
// reassembling streams:
//
//   - OpenAI chat: tool_calls deltas joined by index (id and name usually only
//     on a call's first delta), content deltas, the include_usage chunk with
//     "choices":[], "data: [DONE]", and {"error":{…}} chunks. Only the first
//     choice (index 0) is read.
//   - Responses: output_item.added / .done, function_call_arguments.delta /
//     .done, output_text.delta, response.completed (whose full output is used
//     when the stream carried nothing else), and error events.
//   - Anthropic: content_block_start (a tool_use starts with "input":{}),
//     input_json_delta fragments (an empty first one included), text deltas,
//     message_delta stop_reason, ping, and the error event.
//   - Gemini: one whole response per SSE event, or (FramingNone) a streamed
//     JSON array of them; function calls arrive whole.
//   - Ollama: NDJSON lines whose tool_calls carry object arguments, whole.
//     A FramingNone Ollama body that is not one JSON document is read as NDJSON.
//
// A body or event that is not valid JSON is an error wrapping ErrMalformed
// that names the event; the Response then holds what was read before it.
// KindEmbeddings bodies must be JSON; KindGeneric bodies are never an error.
// An unknown kind is ErrUnsupported.
func ParseResponse(kind Kind, f Framing, body []byte) (Response, error) {
	var acc accumulator
	switch kind {
	case KindOpenAIChat:
		acc = &chatAcc{byIndex: map[int64]int{}}
	case KindOpenAIResponses:
		acc = &responsesAcc{byKey: map[string]int{}}
	case KindAnthropicMessages:
		acc = &anthropicAcc{byIndex: map[int64]int{}}
	case KindGemini:
		acc = &geminiAcc{}
	case KindOllama:
		acc = &ollamaAcc{}
	case KindBedrockConverse:
		acc = &converseAcc{byIndex: map[int64]int{}}
	case KindBedrockInvoke:
		acc = &invokeAcc{anthropic: &anthropicAcc{byIndex: map[int64]int{}}, other: &converseAcc{byIndex: map[int64]int{}}}
	case KindEmbeddings, KindGeneric, KindMCP:
		acc = &errorAcc{}
	default:
		return Response{}, fmt.Errorf("%s response: %w: unknown API kind", kind, ErrUnsupported)
	}
	err := eachDoc(kind, f, body, func(doc gjson.Result, _ func(int) int) { acc.add(doc) })
	if kind == KindGeneric || kind == KindMCP {
		err = nil
	}
	r := acc.finish()
	r.Finish = finishOf(kind, r.Stop, len(r.ToolCalls) > 0)
	if err != nil {
		return r, fmt.Errorf("%s response: %w: %v", kind, ErrMalformed, err)
	}
	return r, nil
}

// eachDoc calls fn with each JSON document of a body: each SSE event's data
// (skipping events without data and OpenAI's "[DONE]"), each non-blank NDJSON
// line, the body itself, or each element of a Gemini streamed array. It stops
// at the first document that is not valid JSON. at maps an offset in the
// document's text (which Result.Index values are) to an offset in body.
func eachDoc(kind Kind, f Framing, body []byte, fn func(doc gjson.Result, at func(int) int)) error {
	if f == FramingNone && kind == KindOllama && len(bytes.TrimSpace(body)) > 0 && checkJSON(body) != nil {
		f = FramingNDJSON
	}
	if f == FramingEventStream {
		return eventStreamDocs(kind, body, fn)
	}
	if f != FramingSSE && f != FramingNDJSON {
		doc, err := parseDoc(body)
		if err != nil {
			return err
		}
		same := func(p int) int { return p }
		if kind == KindGemini && doc.IsArray() {
			each(doc, func(_ int, d gjson.Result) { fn(d, same) })
			return nil
		}
		fn(doc, same)
		return nil
	}
	unit := "event"
	if f == FramingNDJSON {
		unit = "line"
	}
	off := 0
	for i, ev := range Split(f, body) {
		base := off
		off += len(ev.Raw)
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 || (f == FramingSSE && string(data) == "[DONE]") {
			continue
		}
		doc, err := parseDoc(ev.Data)
		if err != nil {
			return fmt.Errorf("%s %d: %v", unit, i, err)
		}
		at := func(p int) int { return base + p }
		if f == FramingSSE {
			raw, first := ev.Raw, i == 0
			at = func(p int) int { return base + sseOffset(raw, first, p) }
		}
		fn(doc, at)
	}
	return nil
}

// sseOffset maps an offset in an SSE event's joined data to an offset in the
// event's raw bytes.
func sseOffset(raw []byte, first bool, p int) int {
	_, _, spans := parseSSE(raw, first, true)
	d := 0
	for _, s := range spans {
		n := s.end - s.start
		if p <= d+n {
			return s.start + (p - d)
		}
		d += n + 1
	}
	return len(raw)
}

// accumulator gathers a Response from a body's documents.
type accumulator interface {
	add(doc gjson.Result)
	finish() Response
}

// callAcc is a tool call being reassembled.
type callAcc struct {
	id, name string
	args     []byte // fragments joined
	initial  []byte // arguments known before any fragment (Anthropic input)
	done     []byte // arguments announced whole at the end (Responses .done)
}

func (c *callAcc) call() ToolCall {
	a := c.args
	if len(a) == 0 {
		a = c.done
	}
	if len(a) == 0 {
		a = c.initial
	}
	return ToolCall{ID: c.id, Name: c.name, Arguments: orEmptyObject(bytes.Clone(a))}
}

// base holds what every accumulator gathers.
type base struct {
	text      strings.Builder
	reasoning strings.Builder
	calls     []*callAcc
	stop      string
	err       string
	usage     Usage
	id        string // ResponseID
	model     string // Model
}

func (b *base) newCall(id, name string) int {
	b.calls = append(b.calls, &callAcc{id: id, name: name})
	return len(b.calls) - 1
}

func (b *base) response() Response {
	r := Response{Text: b.text.String(), Reasoning: b.reasoning.String(), Stop: b.stop, Error: b.err, Usage: b.usage, ResponseID: b.id, Model: b.model}
	for _, c := range b.calls {
		r.ToolCalls = append(r.ToolCalls, c.call())
	}
	return r
}

// usagePaths names where a wire keeps its token counts, relative to its
// usage object; "" for a count the wire does not have. Input and Output
// are each the sum of their paths present (Anthropic counts cache reads and
// writes apart from input_tokens, Gemini thoughts apart from candidates).
type usagePaths struct {
	input, output     []string
	reasoning, cached string
}

var (
	chatUsagePaths      = usagePaths{input: []string{"prompt_tokens"}, output: []string{"completion_tokens"}, reasoning: "completion_tokens_details.reasoning_tokens", cached: "prompt_tokens_details.cached_tokens"}
	responsesUsagePaths = usagePaths{input: []string{"input_tokens"}, output: []string{"output_tokens"}, reasoning: "output_tokens_details.reasoning_tokens", cached: "input_tokens_details.cached_tokens"}
	anthropicUsagePaths = usagePaths{input: []string{"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}, output: []string{"output_tokens"}, cached: "cache_read_input_tokens"}
	geminiUsagePaths    = usagePaths{input: []string{"promptTokenCount"}, output: []string{"candidatesTokenCount", "thoughtsTokenCount"}, reasoning: "thoughtsTokenCount", cached: "cachedContentTokenCount"}
	ollamaUsagePaths    = usagePaths{input: []string{"prompt_eval_count"}, output: []string{"eval_count"}}
	converseUsagePaths  = usagePaths{input: []string{"inputTokens"}, output: []string{"outputTokens"}}
)

// readUsage sets the usage from the counts at p's paths in u, leaving a
// count alone when none of its paths is present, so that a later event
// that repeats only some counts (Anthropic's message_delta) keeps the
// others.
func (b *base) readUsage(u gjson.Result, p usagePaths) {
	if !u.IsObject() {
		return
	}
	sum := func(dst *int, paths ...string) {
		total, seen := 0, false
		for _, k := range paths {
			if v := u.Get(k); k != "" && v.Type == gjson.Number {
				total += int(v.Int())
				seen = true
			}
		}
		if seen {
			*dst = total
		}
	}
	sum(&b.usage.Input, p.input...)
	sum(&b.usage.Output, p.output...)
	sum(&b.usage.Reasoning, p.reasoning)
	sum(&b.usage.Cached, p.cached)
}

// readModel keeps the model an answer names at v, when it names one.
func (b *base) readModel(v gjson.Result) {
	if s := strOf(v); s != "" {
		b.model = s
	}
}

// errorText reads an error value: an object {type|status|code, message} or a
// plain string.
func errorText(e gjson.Result) string {
	if e.Type == gjson.String {
		return e.Str
	}
	if !e.IsObject() {
		return ""
	}
	msg := strOf(e.Get("message"))
	typ := strOf(e.Get("type"))
	if typ == "" {
		typ = strOf(e.Get("status"))
	}
	if typ == "" {
		typ = strOf(e.Get("code"))
	}
	switch {
	case typ == "":
		return msg
	case msg == "":
		return typ
	}
	return typ + ": " + msg
}

// errorAcc reads an OpenAI-shaped error, model and usage (embeddings,
// generic).
type errorAcc struct{ base }

func (a *errorAcc) add(doc gjson.Result) {
	a.readModel(doc.Get("model"))
	a.readUsage(doc.Get("usage"), chatUsagePaths) // embeddings: prompt_tokens
	if e := errorText(doc.Get("error")); e != "" {
		a.err = e
	}
}

func (a *errorAcc) finish() Response { return a.response() }

// chatAcc reassembles OpenAI chat completions and chunks.
type chatAcc struct {
	base
	byIndex map[int64]int
}

func (a *chatAcc) add(doc gjson.Result) {
	if e := errorText(doc.Get("error")); e != "" {
		a.err = e
	}
	a.readUsage(doc.Get("usage"), chatUsagePaths)
	a.readModel(doc.Get("model"))
	choices := doc.Get("choices")
	done := false
	each(choices, func(_ int, ch gjson.Result) {
		if done || ch.Get("index").Int() != 0 {
			return
		}
		done = true
		if fr := strOf(ch.Get("finish_reason")); fr != "" {
			a.stop = fr
		}
		if m := ch.Get("message"); m.IsObject() {
			a.text.WriteString(contentText(m.Get("content")))
			a.reasoning.WriteString(chatReasoning(m))
			each(m.Get("tool_calls"), func(_ int, tc gjson.Result) {
				i := a.newCall(strOf(tc.Get("id")), strOf(tc.Get("function.name")))
				a.calls[i].done = args(tc.Get("function.arguments"))
			})
			return
		}
		d := ch.Get("delta")
		a.text.WriteString(strOf(d.Get("content")))
		a.reasoning.WriteString(chatReasoning(d))
		each(d.Get("tool_calls"), func(_ int, tc gjson.Result) {
			id := strOf(tc.Get("id"))
			name := strOf(tc.Get("function.name"))
			var i int
			idx := tc.Get("index")
			switch known, ok := a.byIndex[idx.Int()]; {
			case idx.Type == gjson.Number && ok:
				i = known
			case idx.Type == gjson.Number:
				i = a.newCall("", "")
				a.byIndex[idx.Int()] = i
			case id == "" && len(a.calls) > 0:
				i = len(a.calls) - 1
			default:
				i = a.newCall("", "")
			}
			c := a.calls[i]
			if c.id == "" {
				c.id = id
			}
			if c.name == "" {
				c.name = name
			}
			if fa := tc.Get("function.arguments"); fa.Type == gjson.String {
				c.args = append(c.args, fa.Str...)
			} else if fa.IsObject() {
				c.args = append(c.args, fa.Raw...)
			}
		})
	})
}

func (a *chatAcc) finish() Response { return a.response() }

// chatReasoning reads the reasoning text OpenAI-compatible servers add to a
// chat message or delta: reasoning_content (DeepSeek, vLLM), else reasoning
// (OpenRouter, Ollama's /v1).
func chatReasoning(m gjson.Result) string {
	r, _ := memberOf(m, "reasoning_content", "reasoning")
	return strOf(r)
}

// contentText reads message content: a string, or an array of parts whose
// text is joined.
func contentText(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.Str
	}
	var b strings.Builder
	each(c, func(_ int, p gjson.Result) {
		if t := strOf(p.Get("type")); t == "text" || t == "output_text" || t == "" {
			b.WriteString(strOf(p.Get("text")))
		}
	})
	return b.String()
}

// responsesAcc reassembles OpenAI Responses objects and events.
type responsesAcc struct {
	base
	byKey     map[string]int // "o<output_index>" and "i<item id>" to calls
	completed gjson.Result
	events    int
	// summary is the reasoning summary streamed so far and part the
	// item and summary_index of its last delta; rtext is the streamed
	// reasoning_text, used when no summary came.
	summary, rtext strings.Builder
	part           string
}

func (a *responsesAcc) add(doc gjson.Result) {
	typ := strOf(doc.Get("type"))
	switch {
	case strOf(doc.Get("object")) == "response":
		a.readResponse(doc)
		return
	case typ == "":
		if e := errorText(doc.Get("error")); e != "" {
			a.err = e // an error body: {"error":{…}}
		}
		return
	}
	a.events++
	if id := doc.Get("response.id"); id.Type == gjson.String {
		a.id = id.Str // response.created, .in_progress, .completed …
	}
	switch typ {
	case "response.output_item.added", "response.output_item.done":
		it := doc.Get("item")
		if strOf(it.Get("type")) != "function_call" {
			return
		}
		c := a.call(doc, strOf(it.Get("id")))
		if c.id == "" {
			c.id = strOf(it.Get("call_id"))
		}
		if c.name == "" {
			c.name = strOf(it.Get("name"))
		}
		if s := strOf(it.Get("arguments")); s != "" {
			c.done = []byte(s)
		}
	case "response.function_call_arguments.delta":
		c := a.call(doc, strOf(doc.Get("item_id")))
		c.args = append(c.args, strOf(doc.Get("delta"))...)
	case "response.function_call_arguments.done":
		c := a.call(doc, strOf(doc.Get("item_id")))
		if s := strOf(doc.Get("arguments")); s != "" {
			c.done = []byte(s)
		}
	case "response.output_text.delta":
		a.text.WriteString(strOf(doc.Get("delta")))
	case "response.reasoning_summary_text.delta":
		part := strOf(doc.Get("item_id")) + "#" + doc.Get("summary_index").Raw
		if a.part != part && a.summary.Len() > 0 {
			a.summary.WriteString("\n\n")
		}
		a.part = part
		a.summary.WriteString(strOf(doc.Get("delta")))
	case "response.reasoning_text.delta":
		a.rtext.WriteString(strOf(doc.Get("delta")))
	case "response.completed", "response.incomplete", "response.failed":
		a.completed = doc.Get("response")
		a.status(a.completed)
	case "error":
		// {"type":"error","code","message"}, or the error in "error".
		if e := errorText(doc.Get("error")); e != "" {
			a.err = e
		} else if code := strOf(doc.Get("code")); code != "" {
			a.err = code + ": " + strOf(doc.Get("message"))
		} else {
			a.err = strOf(doc.Get("message"))
		}
	}
}

// call finds (or starts) the call an event is about, by output_index or item id.
func (a *responsesAcc) call(doc gjson.Result, itemID string) *callAcc {
	var keys []string
	if oi := doc.Get("output_index"); oi.Type == gjson.Number {
		keys = append(keys, "o"+strconv.FormatInt(oi.Int(), 10))
	}
	if itemID != "" {
		keys = append(keys, "i"+itemID)
	}
	i, found := -1, false
	for _, k := range keys {
		if j, ok := a.byKey[k]; ok {
			i, found = j, true
			break
		}
	}
	if !found {
		i = a.newCall("", "")
	}
	for _, k := range keys {
		a.byKey[k] = i
	}
	return a.calls[i]
}

func (a *responsesAcc) status(r gjson.Result) {
	if s := strOf(r.Get("incomplete_details.reason")); s != "" {
		a.stop = s
	} else if s := strOf(r.Get("status")); s != "" {
		a.stop = s
	}
	if e := errorText(r.Get("error")); e != "" {
		a.err = e
	}
	a.readUsage(r.Get("usage"), responsesUsagePaths)
	a.readModel(r.Get("model"))
}

// readResponse reads a whole response object's output.
func (a *responsesAcc) readResponse(r gjson.Result) {
	a.id = strOf(r.Get("id"))
	a.status(r)
	each(r.Get("output"), func(_ int, it gjson.Result) {
		switch strOf(it.Get("type")) {
		case "message":
			a.text.WriteString(contentText(it.Get("content")))
		case "function_call":
			i := a.newCall(strOf(it.Get("call_id")), strOf(it.Get("name")))
			a.calls[i].done = args(it.Get("arguments"))
		case "reasoning":
			a.reasoning.WriteString(reasoningItemText(it))
		}
	})
}

// reasoningItemText reads a reasoning item: its summary parts joined by a
// blank line, else its reasoning_text content.
func reasoningItemText(it gjson.Result) string {
	var parts []string
	each(it.Get("summary"), func(_ int, p gjson.Result) {
		parts = append(parts, strOf(p.Get("text")))
	})
	if len(parts) > 0 {
		return strings.Join(parts, "\n\n")
	}
	var b strings.Builder
	each(it.Get("content"), func(_ int, p gjson.Result) {
		b.WriteString(strOf(p.Get("text")))
	})
	return b.String()
}

func (a *responsesAcc) finish() Response {
	if a.summary.Len() > 0 {
		a.reasoning.WriteString(a.summary.String())
	} else {
		a.reasoning.WriteString(a.rtext.String())
	}
	if a.events > 0 && len(a.calls) == 0 && a.text.Len() == 0 && a.reasoning.Len() == 0 && a.completed.Exists() {
		a.readResponse(a.completed)
	}
	return a.response()
}

// anthropicAcc reassembles Anthropic messages and stream events.
type anthropicAcc struct {
	base
	byIndex map[int64]int
}

func (a *anthropicAcc) add(doc gjson.Result) {
	switch strOf(doc.Get("type")) {
	case "message":
		a.readMessage(doc)
	case "message_start":
		a.readMessage(doc.Get("message"))
	case "content_block_start":
		cb := doc.Get("content_block")
		switch strOf(cb.Get("type")) {
		case "text":
			a.text.WriteString(strOf(cb.Get("text")))
		case "thinking":
			a.reasoning.WriteString(strOf(cb.Get("thinking")))
		case "tool_use":
			i := a.newCall(strOf(cb.Get("id")), strOf(cb.Get("name")))
			a.calls[i].initial = rawOf(cb.Get("input"))
			a.byIndex[doc.Get("index").Int()] = i
		}
	case "content_block_delta":
		d := doc.Get("delta")
		switch strOf(d.Get("type")) {
		case "text_delta":
			a.text.WriteString(strOf(d.Get("text")))
		case "thinking_delta":
			a.reasoning.WriteString(strOf(d.Get("thinking")))
		case "input_json_delta":
			if i, ok := a.byIndex[doc.Get("index").Int()]; ok {
				c := a.calls[i]
				c.args = append(c.args, strOf(d.Get("partial_json"))...)
			}
		}
	case "message_delta":
		if s := strOf(doc.Get("delta.stop_reason")); s != "" {
			a.stop = s
		}
		a.readUsage(doc.Get("usage"), anthropicUsagePaths)
	case "error":
		a.err = errorText(doc.Get("error"))
	}
}

func (a *anthropicAcc) readMessage(m gjson.Result) {
	if s := strOf(m.Get("stop_reason")); s != "" {
		a.stop = s
	}
	a.readUsage(m.Get("usage"), anthropicUsagePaths)
	a.readModel(m.Get("model"))
	each(m.Get("content"), func(_ int, b gjson.Result) {
		switch strOf(b.Get("type")) {
		case "text":
			a.text.WriteString(strOf(b.Get("text")))
		case "thinking":
			a.reasoning.WriteString(strOf(b.Get("thinking")))
		case "tool_use":
			i := a.newCall(strOf(b.Get("id")), strOf(b.Get("name")))
			a.calls[i].initial = args(b.Get("input"))
		}
	})
}

func (a *anthropicAcc) finish() Response { return a.response() }

// geminiAcc reads Gemini responses: whole, or one per stream chunk.
type geminiAcc struct{ base }

func (a *geminiAcc) add(doc gjson.Result) {
	if e := errorText(doc.Get("error")); e != "" {
		a.err = e
	}
	a.readUsage(doc.Get("usageMetadata"), geminiUsagePaths)
	a.readModel(doc.Get("modelVersion"))
	cand := gjson.Result{}
	each(doc.Get("candidates"), func(_ int, c gjson.Result) {
		if !cand.Exists() && c.Get("index").Int() == 0 {
			cand = c
		}
	})
	if !cand.Exists() {
		if s := strOf(doc.Get("promptFeedback.blockReason")); s != "" {
			a.stop = s
		}
		return
	}
	each(cand.Get("content.parts"), func(_ int, p gjson.Result) {
		if fc, _ := memberOf(p, "functionCall", "function_call"); fc.IsObject() {
			i := a.newCall(strOf(fc.Get("id")), strOf(fc.Get("name")))
			a.calls[i].initial = args(fc.Get("args"))
			return
		}
		if p.Get("thought").Type == gjson.True {
			a.reasoning.WriteString(strOf(p.Get("text")))
		} else {
			a.text.WriteString(strOf(p.Get("text")))
		}
	})
	if s := strOf(cand.Get("finishReason")); s != "" {
		a.stop = s
	}
}

func (a *geminiAcc) finish() Response { return a.response() }

// ollamaAcc reads Ollama /api/chat and /api/generate lines.
type ollamaAcc struct{ base }

func (a *ollamaAcc) add(doc gjson.Result) {
	if e := errorText(doc.Get("error")); e != "" {
		a.err = e
	}
	m := doc.Get("message")
	a.text.WriteString(strOf(m.Get("content")))
	a.text.WriteString(strOf(doc.Get("response")))
	a.reasoning.WriteString(strOf(m.Get("thinking")))
	a.reasoning.WriteString(strOf(doc.Get("thinking")))
	a.readUsage(doc, ollamaUsagePaths)
	a.readModel(doc.Get("model"))
	for _, calls := range []gjson.Result{m.Get("tool_calls"), doc.Get("tool_calls")} { // chat's, generate's
		each(calls, func(_ int, tc gjson.Result) {
			i := a.newCall(strOf(tc.Get("id")), strOf(tc.Get("function.name")))
			a.calls[i].initial = args(tc.Get("function.arguments"))
		})
	}
	if s := strOf(doc.Get("done_reason")); s != "" {
		a.stop = s
	}
}

func (a *ollamaAcc) finish() Response { return a.response() }

// finishOf reads a provider's finish or stop reason as a neutral Finish;
// calls says whether the answer called tools, for the wires whose reason
// does not say so.
func finishOf(kind Kind, stop string, calls bool) Finish {
	stopOrCalls := FinishStop
	if calls {
		stopOrCalls = FinishToolCalls
	}
	switch kind {
	case KindOpenAIChat:
		switch stop {
		case "stop":
			return FinishStop
		case "length":
			return FinishLength
		case "tool_calls", "function_call":
			return FinishToolCalls
		}
	case KindOpenAIResponses:
		switch stop {
		case "completed":
			return stopOrCalls
		case "max_output_tokens":
			return FinishLength
		}
	case KindAnthropicMessages:
		switch stop {
		case "end_turn", "stop_sequence":
			return FinishStop
		case "max_tokens":
			return FinishLength
		case "tool_use":
			return FinishToolCalls
		}
	case KindBedrockConverse, KindBedrockInvoke:
		switch stop {
		case "end_turn", "stop_sequence", "stop", "FINISH", "END_OF_TEXT":
			return stopOrCalls
		case "max_tokens", "length", "LENGTH":
			return FinishLength
		case "tool_use":
			return FinishToolCalls
		}
	case KindGemini:
		switch stop {
		case "STOP":
			return stopOrCalls
		case "MAX_TOKENS":
			return FinishLength
		}
	case KindOllama:
		switch stop {
		case "stop":
			return stopOrCalls
		case "length":
			return FinishLength
		}
	}
	return Finish(stop)
}
