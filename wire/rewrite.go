package wire

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"slices"

	"github.com/tidwall/gjson"
)

// RewriteCallIDs replaces tool call ids in a request body or in a response
// body (streamed or not): every id that is a key of ids becomes its value,
// wherever the API carries it:
//
//   - OpenAI chat: tool_calls[].id in messages, choices[].message and
//     choices[].delta; a tool message's tool_call_id.
//   - Responses: call_id of function_call and function_call_output items, in
//     input[], output[], stream events' item and response.output[].
//   - Anthropic: tool_use id (messages, content[], message_start,
//     content_block_start); tool_result tool_use_id.
//   - Gemini: functionCall.id and functionResponse.id (and their snake_case
//     spellings) in contents[] and candidates[].
//   - Ollama: tool_calls[].id in messages and message; a tool message's
//     tool_call_id, when it has one.
//   - Bedrock Converse: toolUse.toolUseId and toolResult.toolUseId in
//     messages[].content[] and output.message.content[]; a stream's
//     start.toolUse.toolUseId.
//   - Bedrock InvokeModel: where Anthropic's (or, for Nova's bodies,
//     Converse's) are; a stream's chunk messages carry each event as the
//     base64 of its JSON in "bytes", which is decoded, rewritten and
//     encoded again. Titan and Llama bodies carry no calls.
//
// Only the id string tokens change: a stream keeps its framing, its events
// and their order, and every byte outside the rewritten values.
//
// # Calls without ids
//
// Gemini calls, and Ollama calls as documented, usually carry no id. Such a
// call is addressed by the key SyntheticID(name, n) = "#<name>#<n>": the n-th
// call (n from 1) to function name among the calls of this body that have no
// id (absent, null, "" or not a string), counted in body order across all
// events of a stream. When ids has that key, the call gets an id member
// ("id", inserted after the call object's last member, or replacing the
// null or empty value). ToolCall.ID reads "" for these, in the same order,
// so the n-th such call with a given Name is the one addressed.
//
// Results without ids differ by API. In a Gemini request the id-less
// functionResponses are counted the same way, separately from the calls:
// the n-th one for name gets the id of key SyntheticID(name, n), so that a
// call and its answer keep pairing (the Gemini docs ask the application to
// send a call's id back with its response). An Ollama tool message without
// tool_call_id answers its call by tool_name, the way Ollama documents the
// client, and such a client answers the same way when the call later
// carries an id: it never gets a tool_call_id here. Only one that has a
// tool_call_id is rewritten, like any id.
//
// KindGeneric and KindEmbeddings bodies carry no calls and come back
// unchanged, as does any body when ids is empty (the result may then share
// memory with body). A body or event that is not JSON is ErrMalformed; an
// unknown kind, ErrUnsupported.
func RewriteCallIDs(kind Kind, f Framing, body []byte, ids map[string]string) ([]byte, error) {
	switch kind {
	case KindGeneric, KindEmbeddings, KindMCP:
		return body, nil
	case KindOpenAIChat, KindOpenAIResponses, KindAnthropicMessages, KindGemini, KindOllama, KindBedrockConverse, KindBedrockInvoke:
	default:
		return nil, fmt.Errorf("%s: rewrite call ids: %w: unknown API kind", kind, ErrUnsupported)
	}
	if len(ids) == 0 {
		return body, nil
	}
	if f == FramingEventStream {
		return rewriteEventStream(kind, body, ids)
	}
	rw := rewriter{ids: ids, calls: map[string]int{}, results: map[string]int{}}
	var bad error
	err := eachDoc(kind, f, body, func(doc gjson.Result, at func(int) int) {
		idSites(kind, doc, func(s idSite) {
			e, ok := rw.edit(s)
			if !ok || bad != nil {
				return
			}
			n := e.end - e.start
			e.start = at(e.start)
			e.end = e.start + n
			if e.end > len(body) || (n > 0 && !bytes.Equal(body[e.start:e.end], []byte(s.val.Raw))) {
				bad = fmt.Errorf("id at byte %d: position lost", e.start)
				return
			}
			rw.edits = append(rw.edits, e)
		})
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, fmt.Errorf("%s: rewrite call ids: %w: %v", kind, ErrMalformed, err)
	}
	return applyEdits(body, rw.edits), nil
}

// idSite is a place where a call id is (or, for id-less calls, could be).
type idSite struct {
	val    gjson.Result // the id value; may not exist
	obj    gjson.Result // the object holding it
	key    string       // its member name
	name   string       // the function name, for synthetic ids
	result bool         // a result's reference to a call, counted apart
	synth  bool         // an id-less site may take a synthetic id
}

// idSites calls emit for each id site of one document, in document order.
func idSites(kind Kind, doc gjson.Result, emit func(idSite)) {
	site := func(obj gjson.Result, key string) idSite {
		return idSite{val: obj.Get(key), obj: obj, key: key}
	}
	if kind == KindBedrockInvoke {
		if k := invokeShapeKind(invokeFamily(doc)); k != KindGeneric {
			idSites(k, doc, emit)
		}
		return
	}
	switch kind {
	case KindOpenAIChat:
		each(doc.Get("messages"), func(_ int, m gjson.Result) {
			each(m.Get("tool_calls"), func(_ int, tc gjson.Result) { emit(site(tc, "id")) })
			if strOf(m.Get("role")) == "tool" {
				emit(site(m, "tool_call_id"))
			}
		})
		each(doc.Get("choices"), func(_ int, ch gjson.Result) {
			each(ch.Get("message.tool_calls"), func(_ int, tc gjson.Result) { emit(site(tc, "id")) })
			each(ch.Get("delta.tool_calls"), func(_ int, tc gjson.Result) { emit(site(tc, "id")) })
		})
	case KindOllama:
		call := func(_ int, tc gjson.Result) {
			s := site(tc, "id")
			s.name, s.synth = strOf(tc.Get("function.name")), true
			emit(s)
		}
		each(doc.Get("messages"), func(_ int, m gjson.Result) {
			each(m.Get("tool_calls"), call)
			if strOf(m.Get("role")) == "tool" {
				// Never synthetic: a tool message answering by
				// tool_name keeps doing so.
				s := site(m, "tool_call_id")
				s.result = true
				emit(s)
			}
		})
		each(doc.Get("message.tool_calls"), call)
	case KindOpenAIResponses:
		item := func(_ int, it gjson.Result) {
			switch strOf(it.Get("type")) {
			case "function_call":
				emit(site(it, "call_id"))
			case "function_call_output":
				s := site(it, "call_id")
				s.result = true
				emit(s)
			}
		}
		each(doc.Get("input"), item)
		each(doc.Get("output"), item)
		if it := doc.Get("item"); it.IsObject() {
			item(0, it)
		}
		each(doc.Get("response.output"), item)
	case KindAnthropicMessages:
		block := func(_ int, b gjson.Result) {
			switch strOf(b.Get("type")) {
			case "tool_use":
				emit(site(b, "id"))
			case "tool_result":
				s := site(b, "tool_use_id")
				s.result = true
				emit(s)
			}
		}
		each(doc.Get("messages"), func(_ int, m gjson.Result) { each(m.Get("content"), block) })
		each(doc.Get("content"), block)
		each(doc.Get("message.content"), block)
		if cb := doc.Get("content_block"); cb.IsObject() {
			block(0, cb)
		}
	case KindBedrockConverse:
		block := func(_ int, b gjson.Result) {
			if tu := b.Get("toolUse"); tu.IsObject() {
				emit(site(tu, "toolUseId"))
			}
			if tr := b.Get("toolResult"); tr.IsObject() {
				s := site(tr, "toolUseId")
				s.result = true
				emit(s)
			}
		}
		each(doc.Get("messages"), func(_ int, m gjson.Result) { each(m.Get("content"), block) })
		each(doc.Get("output.message.content"), block)
		if tu := doc.Get("start.toolUse"); tu.IsObject() {
			emit(site(tu, "toolUseId"))
		}
		// A Nova InvokeModel stream chunk wraps the event.
		if tu := doc.Get("contentBlockStart.start.toolUse"); tu.IsObject() {
			emit(site(tu, "toolUseId"))
		}
	case KindGemini:
		parts := func(_ int, p gjson.Result) {
			if fc, _ := memberOf(p, "functionCall", "function_call"); fc.IsObject() {
				s := site(fc, "id")
				s.name, s.synth = strOf(fc.Get("name")), true
				emit(s)
			}
			if fr, _ := memberOf(p, "functionResponse", "function_response"); fr.IsObject() {
				s := site(fr, "id")
				s.name, s.result, s.synth = strOf(fr.Get("name")), true, true
				emit(s)
			}
		}
		one := func(_ int, d gjson.Result) {
			each(d.Get("contents"), func(_ int, c gjson.Result) { each(c.Get("parts"), parts) })
			each(d.Get("candidates"), func(_ int, c gjson.Result) { each(c.Get("content.parts"), parts) })
		}
		if doc.IsArray() {
			each(doc, one)
		} else {
			one(0, doc)
		}
	}
}

// edit replaces body[start:end] by text (an insertion when start == end).
type edit struct {
	start, end int
	text       []byte
}

// rewriter decides the edit for each id site, counting id-less sites.
type rewriter struct {
	ids            map[string]string
	calls, results map[string]int // id-less sites seen, by function name
	edits          []edit
}

func (rw *rewriter) edit(s idSite) (edit, bool) {
	if id := strOf(s.val); id != "" {
		to, ok := rw.ids[id]
		if !ok {
			return edit{}, false
		}
		return edit{s.val.Index, s.val.Index + len(s.val.Raw), quote(to)}, true
	}
	if !s.synth {
		return edit{}, false
	}
	count := rw.calls
	if s.result {
		count = rw.results
	}
	count[s.name]++
	to, ok := rw.ids[SyntheticID(s.name, count[s.name])]
	switch {
	case !ok:
		return edit{}, false
	case s.val.Exists():
		return edit{s.val.Index, s.val.Index + len(s.val.Raw), quote(to)}, true
	case !s.obj.IsObject():
		return edit{}, false
	}
	member := append(quote(s.key), ':')
	member = append(member, quote(to)...)
	last := -1
	s.obj.ForEach(func(_, v gjson.Result) bool {
		last = v.Index + len(v.Raw)
		return true
	})
	if last < 0 {
		return edit{s.obj.Index + 1, s.obj.Index + 1, member}, true
	}
	return edit{last, last, append([]byte{','}, member...)}, true
}

// applyEdits returns body with the edits made.
func applyEdits(body []byte, edits []edit) []byte {
	if len(edits) == 0 {
		return body
	}
	slices.SortStableFunc(edits, func(a, b edit) int { return a.start - b.start })
	n := len(body)
	for _, e := range edits {
		n += len(e.text) - (e.end - e.start)
	}
	out := make([]byte, 0, n)
	pos := 0
	for _, e := range edits {
		if e.start < pos {
			continue // overlapping; cannot happen for distinct sites
		}
		out = append(out, body[pos:e.start]...)
		out = append(out, e.text...)
		pos = e.end
	}
	return append(out, body[pos:]...)
}

// rewriteEventStream renames call ids in each message's payload of an event
// stream and frames each changed message anew (its lengths and CRCs
// computed again), keeping the messages as they were otherwise.
func rewriteEventStream(kind Kind, body []byte, ids map[string]string) ([]byte, error) {
	s := NewSplitter(FramingEventStream)
	evs := s.Push(body)
	more, rest := s.Finish()
	evs = append(evs, more...)
	if len(rest) > 0 {
		return nil, fmt.Errorf("%s: rewrite call ids: %w: %d bytes after the last whole event stream message (%v)", kind, ErrMalformed, len(rest), s.Err())
	}
	out := make([]byte, 0, len(body))
	for n, ev := range evs {
		var bad error
		raw, err := ReframeEventStream(ev.Raw, func(p []byte) []byte {
			rewrite := RewriteCallIDs
			if kind == KindBedrockInvoke {
				rewrite = rewriteChunk
			}
			q, err := rewrite(kind, FramingNone, p, ids)
			if err != nil {
				bad = err
				return p
			}
			return q
		})
		if err == nil {
			err = bad
		}
		if err != nil {
			return nil, fmt.Errorf("event stream message %d: %w", n, err)
		}
		out = append(out, raw...)
	}
	return out, nil
}

// rewriteChunk renames call ids in an InvokeModelWithResponseStream
// message's payload, {"bytes":"<base64 of the model's event>",…}: the
// decoded event is rewritten and encoded again in place of the old
// string, every other byte of the payload kept. A payload without bytes
// (an exception's) is kept as it is.
func rewriteChunk(kind Kind, _ Framing, p []byte, ids map[string]string) ([]byte, error) {
	b := gjson.GetBytes(p, "bytes")
	if b.Type != gjson.String {
		return p, nil
	}
	dec, err := base64.StdEncoding.DecodeString(b.Str)
	if err != nil {
		return nil, fmt.Errorf("%s: rewrite call ids: %w: bytes: %v", kind, ErrMalformed, err)
	}
	out, err := RewriteCallIDs(kind, FramingNone, dec, ids)
	if err != nil || bytes.Equal(out, dec) {
		return p, err
	}
	return applyEdits(p, []edit{{b.Index, b.Index + len(b.Raw), quote(base64.StdEncoding.EncodeToString(out))}}), nil
}
