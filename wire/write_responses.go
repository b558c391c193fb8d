package wire

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// writeResponses writes an OpenAI Responses answer: a response object
// indented by two spaces (no final newline), or the event stream from
// response.created to response.completed (response.incomplete when the
// answer was cut at its token limit), every event named by its "type" and
// numbered by sequence_number.
//
// The output holds, in order, a reasoning item with the reasoning as its
// summary, a message with the text (also when there is neither text nor a
// call, so that the answer has an output), and a function_call item per
// call. Item ids are the response id's with the item's prefix and its
// output index ("fc_weather-1_1" in "resp_weather-1").
func writeResponses(a *answer, o WriteOptions) Written {
	r := &responsesWriter{a: a, o: o}
	if checkJSON(o.Request) == nil {
		r.req = gjson.ParseBytes(o.Request)
	}
	r.plan()
	if o.Stream {
		evs, joined := r.stream()
		return Written{Status: http.StatusOK, Header: openAIHeader(openAIStream, a.ID), Events: evs, joined: joined, buffer: joined}
	}
	w := &jsonw{}
	r.object(w, true, true)
	return Written{Status: http.StatusOK, Header: openAIHeader(openAIJSON, a.ID), Body: indented(w.Bytes(), "  ")}
}

// responsesWriter writes one Responses answer.
type responsesWriter struct {
	a     *answer
	o     WriteOptions
	req   gjson.Result
	items []respItem
	// s holds the stream's events, side by side; w lays out each one's
	// document, in memory that serves them all; seq numbers them.
	s   namedSSE
	w   jsonw
	seq int
}

// respItem is one output item.
type respItem struct {
	typ string // "reasoning", "message", "function_call"
	id  string
	c   call // the function call
}

// plan lists the output items.
func (r *responsesWriter) plan() {
	a := r.a
	suffix := strings.TrimPrefix(a.ID, "resp_")
	add := func(typ, prefix string, c call) {
		r.items = append(r.items, respItem{typ: typ, id: prefix + suffix + "_" + strconv.Itoa(len(r.items)), c: c})
	}
	if a.Reasoning != "" {
		add("reasoning", "rs_", call{})
	}
	if a.Text != "" || len(a.calls) == 0 {
		add("message", "msg_", call{})
	}
	for _, c := range a.calls {
		add("function_call", "fc_", c)
	}
}

// status is the response's final status: "completed", or "incomplete" for
// an answer cut at its token limit.
func (r *responsesWriter) status() string {
	if r.a.Finish == FinishLength {
		return "incomplete"
	}
	return "completed"
}

// echo returns the raw value of a request field, or def when the request
// does not set it.
func (r *responsesWriter) echo(path, def string) []byte {
	if v := r.req.Get(path); v.Exists() && v.Type != gjson.Null {
		return []byte(v.Raw)
	}
	return []byte(def)
}

// object writes the response object, as response.created shows it
// (in_progress, no output) or as it ends (final); the non-streamed body
// alone carries billing.
func (r *responsesWriter) object(w *jsonw, final, billing bool) {
	a := r.a
	status, tier := "in_progress", "auto"
	if final {
		status, tier = r.status(), "default"
	}
	w.Obj().
		K("id").Str(a.ID).
		K("object").Str("response").
		K("created_at").Int(a.created()).
		K("status").Str(status).
		K("background").Bool(false)
	if billing {
		w.K("billing").Obj().K("payer").Str("developer").End()
	}
	if final && status == "completed" {
		w.K("completed_at").Int(a.created())
	} else {
		w.K("completed_at").Null()
	}
	w.K("error").Null().
		K("frequency_penalty").Raw(r.echo("frequency_penalty", "0.0"))
	if final && status == "incomplete" {
		w.K("incomplete_details").Obj().K("reason").Str("max_output_tokens").End()
	} else {
		w.K("incomplete_details").Null()
	}
	w.K("instructions").Raw(r.echo("instructions", "null")).
		K("max_output_tokens").Raw(r.echo("max_output_tokens", "null")).
		K("max_tool_calls").Raw(r.echo("max_tool_calls", "null")).
		K("model").Str(a.Model).
		K("moderation").Null().
		K("output").Arr()
	if final {
		for _, it := range r.items {
			r.item(w, it, true)
		}
	}
	w.End().
		K("parallel_tool_calls").Raw(r.echo("parallel_tool_calls", "true")).
		K("presence_penalty").Raw(r.echo("presence_penalty", "0.0")).
		K("previous_response_id").Raw(r.echo("previous_response_id", "null")).
		K("prompt_cache_key").Raw(r.echo("prompt_cache_key", "null")).
		K("prompt_cache_retention").Raw(r.echo("prompt_cache_retention", `"24h"`)).
		K("reasoning").Obj().
		K("effort").Raw(r.echo("reasoning.effort", "null")).
		K("summary").Raw(r.echo("reasoning.summary", "null")).End().
		K("safety_identifier").Raw(r.echo("safety_identifier", "null")).
		K("service_tier").Str(tier).
		K("store").Raw(r.echo("store", "true")).
		K("temperature").Raw(r.echo("temperature", "1.0")).
		K("text").Obj().
		K("format").Raw(r.echo("text.format", `{"type":"text"}`)).
		K("verbosity").Raw(r.echo("text.verbosity", `"medium"`)).End().
		K("tool_choice").Raw(r.echo("tool_choice", `"auto"`)).
		K("tools").Arr()
	each(r.req.Get("tools"), func(_ int, t gjson.Result) { echoTool(w, t) })
	w.End().
		K("top_logprobs").Raw(r.echo("top_logprobs", "0")).
		K("top_p").Raw(r.echo("top_p", "1.0")).
		K("truncation").Raw(r.echo("truncation", `"disabled"`))
	if final {
		w.K("usage").Obj().
			K("input_tokens").Int(int64(a.Usage.Input)).
			K("input_tokens_details").Obj().K("cached_tokens").Int(0).End().
			K("output_tokens").Int(int64(a.Usage.Output)).
			K("output_tokens_details").Obj().K("reasoning_tokens").Int(int64(a.Usage.Reasoning)).End().
			K("total_tokens").Int(int64(a.Usage.Input + a.Usage.Output)).
			End()
	} else {
		w.K("usage").Null()
	}
	w.K("user").Raw(r.echo("user", "null")).
		K("metadata").Raw(r.echo("metadata", "{}")).
		End()
}

// echoTool writes a request tool as the response lists it: a function tool
// as type, description, name, parameters and strict (true unless the
// request says otherwise); any other tool as sent.
func echoTool(w *jsonw, t gjson.Result) {
	if strOf(t.Get("type")) != "function" {
		w.Raw([]byte(t.Raw))
		return
	}
	orDefault := func(v gjson.Result, def string) []byte {
		if !v.Exists() || v.Type == gjson.Null {
			return []byte(def)
		}
		return []byte(v.Raw)
	}
	w.Obj().
		K("type").Str("function").
		K("description").Raw(orDefault(t.Get("description"), "null")).
		K("name").Raw(orDefault(t.Get("name"), `""`)).
		K("parameters").Raw(orDefault(t.Get("parameters"), "null")).
		K("strict").Raw(orDefault(t.Get("strict"), "true")).
		End()
}

// item writes an output item whole (done) or as output_item.added shows it.
func (r *responsesWriter) item(w *jsonw, it respItem, done bool) {
	a := r.a
	status := "in_progress"
	if done {
		status = "completed"
		if a.Finish == FinishLength {
			status = "incomplete"
		}
	}
	w.Obj().K("id").Str(it.id).K("type").Str(it.typ)
	switch it.typ {
	case "reasoning":
		w.K("summary").Arr()
		if done {
			summaryPart(w, a.Reasoning)
		}
		w.End()
	case "message":
		w.K("status").Str(status).K("content").Arr()
		if done {
			outputText(w, a.Text)
		}
		phase := "final_answer"
		if len(a.calls) > 0 {
			phase = "commentary"
		}
		w.End().K("phase").Str(phase).K("role").Str("assistant")
	case "function_call":
		args := ""
		if done {
			args = it.c.args
		}
		w.K("status").Str(status).
			K("arguments").Str(args).
			K("call_id").Str(it.c.id).
			K("name").Str(it.c.name)
	}
	w.End()
}

// outputText writes an output_text content part.
func outputText(w *jsonw, text string) {
	w.Obj().K("type").Str("output_text").
		K("annotations").Raw(emptyArrayJSON).
		K("logprobs").Raw(emptyArrayJSON).
		K("text").Str(text).End()
}

// summaryPart writes a summary_text part.
func summaryPart(w *jsonw, text string) {
	w.Obj().K("type").Str("summary_text").K("text").Str(text).End()
}

// member is one member of a Responses event after "type".
type member struct {
	key string
	val func(w *jsonw)
}

func mStr(key, v string) member { return member{key, func(w *jsonw) { w.Str(v) }} }
func mInt(key string, v int) member {
	return member{key, func(w *jsonw) { w.Int(int64(v)) }}
}
func mRaw(key string, v []byte) member { return member{key, func(w *jsonw) { w.Raw(v) }} }

// event appends a stream event: "type", then the members and
// sequence_number in alphabetical order, as OpenAI sends them.
func (r *responsesWriter) event(typ string, ms ...member) {
	ms = append(ms, mInt("sequence_number", r.seq))
	slices.SortFunc(ms, func(x, y member) int { return strings.Compare(x.key, y.key) })
	w := &r.w
	w.reset()
	w.Obj().K("type").Str(typ)
	for _, m := range ms {
		w.K(m.key)
		m.val(w)
	}
	r.s.event(typ, w.End().Bytes(), 0)
	r.seq++
}

// delta appends a delta event, most of a stream, the bytes event writes
// laid out in runs: "type", then in alphabetical order content_index and
// logprobs (text deltas), delta, item_id, obfuscation (when asked for),
// output_index, sequence_number, and summary_index (reasoning deltas).
func (r *responsesWriter) delta(typ, piece, id string, out int, text, reasoning bool) {
	b := r.w.b[:0]
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, '"')
	if text {
		b = append(b, `,"content_index":0`...)
	}
	b = append(b, `,"delta":`...)
	b = appendString(b, piece)
	b = append(b, `,"item_id":`...)
	b = appendString(b, id)
	if text {
		b = append(b, `,"logprobs":[]`...)
	}
	if r.o.Obfuscation {
		n := r.a.rnd.between(10, 15)
		b = append(b, `,"obfuscation":"`...) // letters and digits need no escape
		b = append(r.a.rnd.appendAlnum(b, n), '"')
	}
	b = append(b, `,"output_index":`...)
	b = strconv.AppendInt(b, int64(out), 10)
	b = append(b, `,"sequence_number":`...)
	b = strconv.AppendInt(b, int64(r.seq), 10)
	if reasoning {
		b = append(b, `,"summary_index":0`...)
	}
	b = append(b, '}')
	r.w.b = b
	r.s.event(typ, b, 0)
	r.seq++
}

// stream writes the events, side by side in one buffer (from o.Buffer
// when it has room; the second result), their list in o.EventBuffer when
// it has room.
func (r *responsesWriter) stream() ([]Event, []byte) {
	n, size := 40, 8000+2*len(r.a.Text)+2*len(r.a.Reasoning)
	for _, ps := range [][]string{r.a.thinkPieces, r.a.textPieces} {
		n += len(ps)
		size += 200 * len(ps)
	}
	for _, c := range r.a.calls {
		n += len(c.args)
		size += 900 + 30*len(c.args)
	}
	r.s = namedSSE{b: r.o.buffer(size), marks: make([]mark, 0, n)}
	obj := func(final bool) member {
		return member{"response", func(w *jsonw) { r.object(w, final, false) }}
	}
	r.event("response.created", obj(false))
	r.event("response.in_progress", obj(false))
	for i, it := range r.items {
		item := func(done bool) member {
			return member{"item", func(w *jsonw) { r.item(w, it, done) }}
		}
		out, id := mInt("output_index", i), mStr("item_id", it.id)
		r.event("response.output_item.added", item(false), out)
		switch it.typ {
		case "reasoning":
			part := func(text string) member {
				return member{"part", func(w *jsonw) { summaryPart(w, text) }}
			}
			sum := mInt("summary_index", 0)
			r.event("response.reasoning_summary_part.added", id, out, part(""), sum)
			for _, p := range r.a.thinkPieces {
				r.delta("response.reasoning_summary_text.delta", p, it.id, i, false, true)
			}
			r.event("response.reasoning_summary_text.done", id, out, sum, mStr("text", r.a.Reasoning))
			r.event("response.reasoning_summary_part.done", id, out, part(r.a.Reasoning), sum)
		case "message":
			part := func(text string) member {
				return member{"part", func(w *jsonw) { outputText(w, text) }}
			}
			ci, lp := mInt("content_index", 0), mRaw("logprobs", emptyArrayJSON)
			r.event("response.content_part.added", ci, id, out, part(""))
			for _, p := range r.a.textPieces {
				r.delta("response.output_text.delta", p, it.id, i, true, false)
			}
			r.event("response.output_text.done", ci, id, lp, out, mStr("text", r.a.Text))
			r.event("response.content_part.done", ci, id, out, part(r.a.Text))
		case "function_call":
			for _, frag := range tokens(it.c.args) {
				r.delta("response.function_call_arguments.delta", frag, it.id, i, false, false)
			}
			r.event("response.function_call_arguments.done", mStr("arguments", it.c.args), id, out)
		}
		r.event("response.output_item.done", item(true), out)
	}
	r.event("response."+r.status(), obj(true))
	return r.s.events(r.o.EventBuffer), r.s.b
}
