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

// writeOllama writes an Ollama answer: one compact object with
// "done":true ("stream":false), or NDJSON lines with "done":false (a line
// per thinking piece, per text piece, one with every tool call) and a last
// "done":true line with done_reason and the counters. An /api/chat answer
// (api.ChatResponse) holds its text, thinking and tool calls in "message";
// an /api/generate answer (api.GenerateResponse, o.OllamaGenerate) holds
// them at the top level, the text as "response", and has no context (no
// token ids to give). Tool calls carry their id when they have one and the
// function index, as the server does; every created_at is the answer's
// Created, to the nanosecond.
func writeOllama(a *answer, o WriteOptions) Written {
	at := a.Created
	if at.IsZero() {
		at = time.Unix(0, 0)
	}
	ol := ollamaLines{a: a, generate: o.OllamaGenerate, stamp: at.UTC().Format(time.RFC3339Nano)}
	if !o.Stream {
		w := &jsonw{}
		ol.line(w, a.Text, a.Reasoning, true, true)
		return Written{Status: http.StatusOK, Header: header(ollamaJSON), Body: w.Bytes()}
	}
	// The lines are laid out side by side in one buffer.
	n := len(a.thinkPieces) + len(a.textPieces) + 2
	size := n * (160 + len(a.Model) + len(ol.stamp))
	for _, ps := range [][]string{a.thinkPieces, a.textPieces} {
		for _, p := range ps {
			size += 2 * len(p)
		}
	}
	for _, c := range a.calls {
		size += 100 + len(c.id) + len(c.name) + len(c.compact)
	}
	w := jsonw{b: o.buffer(size)}
	marks := make([]mark, 0, n)
	emit := func(text, thinking string, calls, done bool) {
		m := mark{start: len(w.b), data: len(w.b)}
		w.next()
		ol.line(&w, text, thinking, calls, done)
		m.dataEnd = len(w.b)
		w.b = append(w.b, '\n')
		marks = append(marks, m)
	}
	for _, p := range a.thinkPieces {
		emit("", p, false, false)
	}
	for _, p := range a.textPieces {
		emit(p, "", false, false)
	}
	if len(a.calls) > 0 {
		emit("", "", true, false)
	}
	emit("", "", false, true)
	return Written{Status: http.StatusOK, Header: header(ollamaStream), Events: cutEvents(w.b, marks, o.EventBuffer), joined: w.b, buffer: w.b}
}

// ollamaLines writes the lines (or the whole body) of one Ollama answer.
type ollamaLines struct {
	a        *answer
	generate bool
	stamp    string
}

// line appends to w, with no container open, one object: text and
// thinking (thinking left out when ""), the answer's tool calls when
// calls, and when done the done_reason and the counters.
func (ol ollamaLines) line(w *jsonw, text, thinking string, calls, done bool) {
	a := ol.a
	w.Obj().K("model").Str(a.Model).K("created_at").Str(ol.stamp)
	if ol.generate {
		w.K("response").Str(text)
		if thinking != "" {
			w.K("thinking").Str(thinking)
		}
		w.K("done").Bool(done)
		if done {
			w.K("done_reason").Str(ollamaDone(a.Finish))
			ol.counters(w)
		}
		if calls && len(a.calls) > 0 {
			ol.calls(w)
		}
		w.End()
		return
	}
	w.K("message").Obj().K("role").Str("assistant").K("content").Str(text)
	if thinking != "" {
		w.K("thinking").Str(thinking)
	}
	if calls && len(a.calls) > 0 {
		ol.calls(w)
	}
	w.End()
	if done {
		w.K("done_reason").Str(ollamaDone(a.Finish))
	}
	w.K("done").Bool(done)
	if done {
		ol.counters(w)
	}
	w.End()
}

// counters writes the timing counters and token counts of a last line.
func (ol ollamaLines) counters(w *jsonw) {
	u := ol.a.Usage
	prompt := time.Duration(u.Input) * ollamaPerPrompt
	eval := time.Duration(u.Output) * ollamaPerOutput
	w.K("total_duration").Int(int64(ollamaLoad + prompt + eval + ollamaOverheadEnd)).
		K("load_duration").Int(int64(ollamaLoad)).
		K("prompt_eval_count").Int(int64(u.Input)).
		K("prompt_eval_duration").Int(int64(prompt)).
		K("eval_count").Int(int64(u.Output)).
		K("eval_duration").Int(int64(eval))
}

// calls writes "tool_calls".
func (ol ollamaLines) calls(w *jsonw) {
	w.K("tool_calls").Arr()
	for i, c := range ol.a.calls {
		w.Obj()
		if c.id != "" {
			w.K("id").Str(c.id)
		}
		w.K("function").Obj().K("index").Int(int64(i)).K("name").Str(c.name).K("arguments").Raw(c.compact).End()
		w.End()
	}
	w.End()
}
