package wire

import (
	"net/http"
	"time"
)

// Ollama content types, as the server sends them.
const (
	ollamaJSON   = "application/json; charset=utf-8"
	ollamaStream = "application/x-ndjson"
)

// ollamaDone is the done_reason of a neutral finish reason; Ollama has
// none of its own for tool calls.
func ollamaDone(f Finish) string {
	switch f {
	case FinishStop, FinishToolCalls:
		return "stop"
	}
	return string(f) // "length"
}

// Ollama's timing counters are derived from the token counts, so that a
// client computing tokens per second gets a plausible, fixed figure.
const (
	ollamaLoad        = 41_295_167 * time.Nanosecond
	ollamaPerPrompt   = 145_403 * time.Nanosecond
	ollamaPerOutput   = 7_730_605 * time.Nanosecond
	ollamaOverheadEnd = 414_042 * time.Nanosecond
)

// writeOllama writes an Ollama /api/chat answer: one compact object with
// "done":true ("stream":false), or NDJSON lines with "done":false (a line
// per thinking piece, per text piece, one with every tool call) and a last
// "done":true line with done_reason and the counters. Tool calls carry
// their id when they have one and the function index, as the server does;
// every created_at is the answer's Created, to the nanosecond.
func writeOllama(a *answer, o WriteOptions) Written {
	at := a.Created
	if at.IsZero() {
		at = time.Unix(0, 0)
	}
	stamp := at.UTC().Format(time.RFC3339Nano)
	line := func(msg func(w *jsonw), done bool) []byte {
		w := &jsonw{}
		w.Obj().K("model").Str(a.Model).K("created_at").Str(stamp).
			K("message").Obj().K("role").Str("assistant")
		msg(w)
		w.End()
		if done {
			w.K("done_reason").Str(ollamaDone(a.Finish))
		}
		w.K("done").Bool(done)
		if done {
			prompt := time.Duration(a.Usage.Input) * ollamaPerPrompt
			eval := time.Duration(a.Usage.Output) * ollamaPerOutput
			w.K("total_duration").Int(int64(ollamaLoad + prompt + eval + ollamaOverheadEnd)).
				K("load_duration").Int(int64(ollamaLoad)).
				K("prompt_eval_count").Int(int64(a.Usage.Input)).
				K("prompt_eval_duration").Int(int64(prompt)).
				K("eval_count").Int(int64(a.Usage.Output)).
				K("eval_duration").Int(int64(eval))
		}
		return w.End().Bytes()
	}
	calls := func(w *jsonw) {
		w.K("tool_calls").Arr()
		for i, c := range a.calls {
			w.Obj()
			if c.id != "" {
				w.K("id").Str(c.id)
			}
			w.K("function").Obj().K("index").Int(int64(i)).K("name").Str(c.name).K("arguments").Raw(c.compact).End()
			w.End()
		}
		w.End()
	}
	if !o.Stream {
		body := line(func(w *jsonw) {
			w.K("content").Str(a.Text)
			if a.Reasoning != "" {
				w.K("thinking").Str(a.Reasoning)
			}
			if len(a.calls) > 0 {
				calls(w)
			}
		}, true)
		return Written{Status: http.StatusOK, Header: header(ollamaJSON), Body: body}
	}
	var evs []Event
	emit := func(doc []byte) {
		raw := append(doc, '\n')
		evs = append(evs, Event{Raw: raw, Data: raw[:len(doc):len(doc)]})
	}
	for _, p := range a.thinkPieces {
		emit(line(func(w *jsonw) { w.K("content").Str("").K("thinking").Str(p) }, false))
	}
	for _, p := range a.textPieces {
		emit(line(func(w *jsonw) { w.K("content").Str(p) }, false))
	}
	if len(a.calls) > 0 {
		emit(line(func(w *jsonw) { w.K("content").Str(""); calls(w) }, false))
	}
	emit(line(func(w *jsonw) { w.K("content").Str("") }, true))
	return Written{Status: http.StatusOK, Header: header(ollamaStream), Events: evs}
}
