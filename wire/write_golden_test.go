package wire_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/wire"
)

// These tests hold the writers to the captured provider bytes: given the
// content of a capture (read back with ParseResponse), the writer sends
// the same kinds of event in the same order, and each event has the
// capture's JSON layout (the key paths in document order) and framing.
// Values (ids, timestamps, text) are not compared; where a capture shows a
// variant the writers do not follow, the case says which and why.

// shape lists the key paths of a JSON document in document order, array
// indices dropped and repeats removed, leaving out paths that start with
// any of skip.
func shape(t testing.TB, doc []byte, skip []string) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out []string
	seen := map[string]bool{}
	var walk func(prefix string)
	walk = func(prefix string) {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("shape of %q: %v", doc, err)
		}
		switch tok {
		case json.Delim('{'):
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					t.Fatalf("shape of %q: %v", doc, err)
				}
				p := prefix + "." + k.(string)
				keep := !seen[p]
				for _, s := range skip {
					keep = keep && !strings.HasPrefix(p, s)
				}
				if keep {
					seen[p] = true
					out = append(out, p)
				}
				walk(p)
			}
			_, _ = dec.Token()
		case json.Delim('['):
			for dec.More() {
				walk(prefix + "[]")
			}
			_, _ = dec.Token()
		}
	}
	walk("")
	return out
}

// label names what an event is, finer than its SSE name: the block, item
// or delta type it carries, or for data-only streams what its delta holds.
func label(kind wire.Kind, e wire.Event) string {
	d := gjson.ParseBytes(e.Data)
	if string(e.Data) == "[DONE]" {
		return "[DONE]"
	}
	switch kind {
	case wire.KindOpenAIChat:
		ch := d.Get("choices.0")
		delta := ch.Get("delta")
		switch {
		case d.Get("error").Exists():
			return "error"
		case !ch.Exists():
			return "usage"
		case ch.Get("finish_reason").Type == gjson.String:
			return "finish"
		case delta.Get("role").Exists() && delta.Get("tool_calls").Exists():
			return "role+call"
		case delta.Get("role").Exists():
			return "role"
		case delta.Get("tool_calls.0.id").Exists():
			return "call"
		case delta.Get("tool_calls").Exists():
			return "arguments"
		case delta.Get("reasoning_content").Exists():
			return "reasoning"
		}
		return "content"
	case wire.KindGemini:
		var parts []string
		d.Get("candidates.0.content.parts").ForEach(func(_, p gjson.Result) bool {
			switch {
			case p.Get("functionCall").Exists():
				parts = append(parts, "functionCall")
			case p.Get("thought").Bool():
				parts = append(parts, "thought")
			default:
				parts = append(parts, "text")
			}
			return true
		})
		l := strings.Join(parts, "+")
		if d.Get("candidates.0.finishReason").Exists() {
			l += "/finish"
		}
		return l
	case wire.KindOllama:
		switch m := d.Get("message"); {
		case d.Get("done").Bool():
			return "done"
		case m.Get("tool_calls").Exists():
			return "tool_calls"
		case m.Get("thinking").Exists():
			return "thinking"
		}
		return "content"
	}
	sub := d.Get("content_block.type").String() + d.Get("delta.type").String() + d.Get("item.type").String()
	if sub != "" {
		return e.Name + "/" + sub
	}
	return e.Name
}

// run is a run of consecutive events with the same label.
type run struct {
	label string
	first wire.Event
}

func runs(kind wire.Kind, evs []wire.Event) []run {
	var out []run
	for _, e := range evs {
		l := label(kind, e)
		if len(out) == 0 || out[len(out)-1].label != l {
			out = append(out, run{l, e})
		}
	}
	return out
}

func labels(rs []run) string {
	var ls []string
	for _, r := range rs {
		ls = append(ls, r.label)
	}
	return strings.Join(ls, " ")
}

// terminator is the line ending that ends an SSE event or NDJSON line.
func terminator(raw []byte) string {
	for _, t := range []string{"\r\n\r\n", "\n\n", "\n"} {
		if bytes.HasSuffix(raw, []byte(t)) {
			return t
		}
	}
	return ""
}

// answerOf reads a capture back into the answer that would produce it.
func answerOf(t testing.TB, kind wire.Kind, f wire.Framing, body []byte) wire.Answer {
	t.Helper()
	r, err := wire.ParseResponse(kind, f, body)
	if err != nil {
		t.Fatalf("read capture: %v", err)
	}
	return wire.Answer{Model: "m", ID: "id-1", Text: r.Text, Reasoning: r.Reasoning, ToolCalls: r.ToolCalls,
		Finish: r.Finish, Usage: r.Usage}
}

func TestWriteMatchesCapturedStreams(t *testing.T) {
	tests := []struct {
		capture string
		kind    wire.Kind
		opts    wire.WriteOptions
		request string // a captured request whose settings the answer echoes
		// sequence, when not "", is the run sequence the writer gives where
		// it follows a different capture than this one.
		sequence string
		skip     []string // key paths not compared, each for a reason given below
	}{
		{capture: "openai-chat-stream-toolcalls.sse", kind: wire.KindOpenAIChat},
		{capture: "openai-chat-stream-text-after-toolresult.sse", kind: wire.KindOpenAIChat},
		// gpt-4o (2025) sends the role alone and puts "usage" before
		// "choices"; the writers follow gpt-4o-mini (2026, the two captures
		// above), which puts the first call in the role chunk.
		{capture: "openai-chat-stream-parallel-toolcalls.sse", kind: wire.KindOpenAIChat,
			sequence: "role+call arguments call arguments finish usage [DONE]", skip: []string{".usage"}},
		// OpenAI normalises a strict tool's schema (additionalProperties);
		// the writer echoes the request's schema as sent.
		{capture: "openai-responses-stream-functioncall.sse", kind: wire.KindOpenAIResponses,
			request: "openai-responses-functioncall.request.json", skip: []string{".response.tools[].parameters."}},
		{capture: "openai-responses-stream-text-after-output.sse", kind: wire.KindOpenAIResponses,
			request: "openai-responses-functioncall-output.request.json", skip: []string{".response.tools[].parameters."}},
		{capture: "anthropic-messages-stream-parallel-tooluse.sse", kind: wire.KindAnthropicMessages},
		// claude-3-opus (2024): the same events, an older message_start
		// and message_delta layout and no tool caller (the 2026 capture
		// above is matched).
		{capture: "anthropic-messages-stream-tooluse.sse", kind: wire.KindAnthropicMessages,
			skip: []string{".message.", ".delta.stop_details", ".usage.", ".content_block.caller"}},
		{capture: "gemini-streamgeneratecontent-sse-functioncall.sse", kind: wire.KindGemini},
		// gemini-2.5-flash ends on the call chunk with a finishMessage and
		// counts serviceTier; the writers end a call as gemini-3 does (the
		// SSE capture above), with an empty text chunk carrying finishReason.
		{capture: "gemini-streamgeneratecontent-jsonarray-functioncall.json", kind: wire.KindGemini,
			opts:     wire.WriteOptions{JSONArray: true},
			sequence: "thought functionCall text/finish",
			skip:     []string{".usageMetadata.candidatesTokenCount", ".usageMetadata.serviceTier", ".candidates[].finish"}},
		// The documentation's example predates the function index and id
		// the server now sends.
		{capture: "ollama-api-chat-stream-toolcalls.ndjson", kind: wire.KindOllama,
			skip: []string{".message.tool_calls[].function.index"}},
	}
	for _, tt := range tests {
		t.Run(tt.capture, func(t *testing.T) {
			body := mustRead(t, tt.capture)
			f := framingOf(tt.capture)
			want := wire.Split(f, body)
			if f == wire.FramingNone {
				want = arrayElements(t, body)
			}
			o := tt.opts
			o.Stream, o.Obfuscation = true, strings.Contains(string(body), "obfuscation")
			o.IncludeUsage = tt.kind == wire.KindOpenAIChat
			if tt.request != "" {
				o.Request = mustRead(t, tt.request)
			}
			w, err := wire.Write(tt.kind, answerOf(t, tt.kind, f, body), o)
			if err != nil {
				t.Fatal(err)
			}
			got := w.Events
			if f == wire.FramingNone {
				got = arrayElements(t, w.Bytes())
			}
			gr, wr := runs(tt.kind, got), runs(tt.kind, want)
			wantSeq := labels(wr)
			if tt.sequence != "" {
				if wantSeq == tt.sequence {
					t.Errorf("the capture's sequence is the writer's; drop the case's sequence")
				}
				wantSeq = tt.sequence
			}
			if labels(gr) != wantSeq {
				t.Errorf("event sequence\n got %s\nwant %s", labels(gr), wantSeq)
			}
			for _, r := range gr {
				c, ok := findRun(wr, r.label)
				if !ok {
					if tt.sequence == "" {
						t.Errorf("%s: not in the capture", r.label)
					}
					continue
				}
				if !json.Valid(c.Data) {
					if !bytes.Equal(r.first.Raw, c.Raw) {
						t.Errorf("%s: %q, the capture has %q", r.label, r.first.Raw, c.Raw)
					}
					continue
				}
				g, w := shape(t, r.first.Data, tt.skip), shape(t, c.Data, tt.skip)
				if strings.Join(g, " ") != strings.Join(w, " ") {
					t.Errorf("%s: layout differs from the capture\n got %v\nwant %v", r.label, g, w)
				}
				if f != wire.FramingNone && terminator(r.first.Raw) != terminator(c.Raw) {
					t.Errorf("%s: ends with %q, the capture with %q", r.label, terminator(r.first.Raw), terminator(c.Raw))
				}
			}
		})
	}
}

func findRun(rs []run, l string) (wire.Event, bool) {
	for _, r := range rs {
		if r.label == l {
			return r.first, true
		}
	}
	return wire.Event{}, false
}

// arrayElements reads a streamed JSON array as events, one per element,
// and checks its separators are Google's ("[", "\n,\r\n", "\n]").
func arrayElements(t testing.TB, body []byte) []wire.Event {
	t.Helper()
	var elems []json.RawMessage
	if err := json.Unmarshal(body, &elems); err != nil {
		t.Fatalf("not a JSON array: %v", err)
	}
	if !bytes.HasPrefix(body, []byte("[{")) || !bytes.HasSuffix(body, []byte("}\n]")) ||
		bytes.Count(body, []byte("}\n,\r\n{")) != len(elems)-1 {
		t.Errorf("array separators are not Google's: %q … %q", body[:min(8, len(body))], body[max(0, len(body)-8):])
	}
	var evs []wire.Event
	for _, e := range elems {
		evs = append(evs, wire.Event{Data: e})
	}
	return evs
}

func TestWriteMatchesCapturedBodies(t *testing.T) {
	tests := []struct {
		capture string
		kind    wire.Kind
		request string
		skip    []string
	}{
		{capture: "openai-chat-toolcalls.response.json", kind: wire.KindOpenAIChat},
		{capture: "openai-responses-functioncall.response.json", kind: wire.KindOpenAIResponses,
			request: "openai-responses-functioncall.request.json", skip: []string{".tools[].parameters."}},
		{capture: "openai-responses-functioncall-output.response.json", kind: wire.KindOpenAIResponses,
			request: "openai-responses-functioncall-output.request.json", skip: []string{".tools[].parameters."}},
		{capture: "anthropic-messages-tooluse.response.json", kind: wire.KindAnthropicMessages},
		{capture: "gemini-generatecontent-functioncall-thinking.response.json", kind: wire.KindGemini},
	}
	for _, tt := range tests {
		t.Run(tt.capture, func(t *testing.T) {
			body := mustRead(t, tt.capture)
			o := wire.WriteOptions{}
			if tt.request != "" {
				o.Request = mustRead(t, tt.request)
			}
			w, err := wire.Write(tt.kind, answerOf(t, tt.kind, wire.FramingNone, body), o)
			if err != nil {
				t.Fatal(err)
			}
			g, want := shape(t, w.Body, tt.skip), shape(t, body, tt.skip)
			if strings.Join(g, " ") != strings.Join(want, " ") {
				t.Errorf("layout differs from the capture\n got %v\nwant %v", g, want)
			}
			if layout(w.Body) != layout(body) {
				t.Errorf("written %s, the capture %s", layout(w.Body), layout(body))
			}
		})
	}
}

// layout says how a JSON body is spaced: compact or indented by some
// string, and whether it ends in a newline.
func layout(b []byte) string {
	nl := ""
	if bytes.HasSuffix(b, []byte("\n")) {
		b, nl = b[:len(b)-1], " and a newline"
	}
	var c bytes.Buffer
	if json.Compact(&c, b) != nil {
		return "not JSON"
	}
	if bytes.Equal(c.Bytes(), b) {
		return "compact" + nl
	}
	for _, in := range []string{"  ", "    "} {
		var buf bytes.Buffer
		_ = json.Indent(&buf, c.Bytes(), "", in)
		if bytes.Equal(buf.Bytes(), b) {
			return fmt.Sprintf("indented by %d", len(in)) + nl
		}
	}
	return "other spacing" + nl
}

func TestWriteErrorMatchesCaptures(t *testing.T) {
	tests := []struct {
		capture string
		kind    wire.Kind
		e       wire.ErrorAnswer
		same    []string // paths whose value is the capture's: the default types
		skip    []string
	}{
		{capture: "openai-error-429-rate-limit.json", kind: wire.KindOpenAIChat, e: wire.ErrorAnswer{Status: 429, Message: "Rate limit reached"},
			same: []string{"error.type", "error.code", "error.param"}},
		{capture: "openai-error-401-invalid-api-key.http", kind: wire.KindOpenAIChat, e: wire.ErrorAnswer{Status: 401, Message: "Incorrect API key provided"},
			same: []string{"error.type", "error.code"}},
		// The 2026 body names the request; llmproxy has no request id to give.
		{capture: "anthropic-error-529-overloaded.json", kind: wire.KindAnthropicMessages, e: wire.ErrorAnswer{Status: 529},
			same: []string{"type", "error.type", "error.message"}, skip: []string{".request_id"}},
		{capture: "anthropic-error-401-authentication.http", kind: wire.KindAnthropicMessages, e: wire.ErrorAnswer{Status: 401, Message: "invalid x-api-key"},
			same: []string{"error.type", "error.message"}},
		{capture: "anthropic-error-400-invalid-request.http", kind: wire.KindAnthropicMessages, e: wire.ErrorAnswer{Status: 400, Message: "bad"},
			same: []string{"error.type"}},
		// llmproxy sends no localized message and no debug details.
		{capture: "gemini-error-400-api-key-invalid.json", kind: wire.KindGemini, e: wire.ErrorAnswer{Status: 400, Type: "API_KEY_INVALID", Message: "API key not valid. Please pass a valid API key."},
			same: []string{"error.code", "error.message", "error.status", "error.details.0.@type", "error.details.0.reason", "error.details.0.domain"},
			skip: []string{".error.details[].metadata", ".error.details[].locale", ".error.details[].message", ".error.details[].detail"}},
	}
	for _, tt := range tests {
		t.Run(tt.capture, func(t *testing.T) {
			want := capturedBody(t, tt.capture)
			w, err := wire.WriteError(tt.kind, tt.e)
			if err != nil {
				t.Fatal(err)
			}
			g, ws := shape(t, w.Body, tt.skip), shape(t, want, tt.skip)
			if strings.Join(g, " ") != strings.Join(ws, " ") {
				t.Errorf("layout differs from the capture\n got %v\nwant %v", g, ws)
			}
			if layout(w.Body) != layout(want) {
				t.Errorf("written %s, the capture %s", layout(w.Body), layout(want))
			}
			for _, p := range tt.same {
				if g, c := gjson.GetBytes(w.Body, p), gjson.GetBytes(want, p); g.Raw != c.Raw {
					t.Errorf("%s = %s, the capture has %s", p, g.Raw, c.Raw)
				}
			}
		})
	}
}

func TestStreamErrorMatchesCapture(t *testing.T) {
	want := wire.Split(wire.FramingSSE, mustRead(t, "anthropic-messages-stream-error-overloaded.sse"))[0]
	got, err := wire.StreamError(wire.KindAnthropicMessages, wire.WriteOptions{Stream: true}, wire.ErrorAnswer{Status: 529, Message: "Overloaded"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "error" || terminator(got.Raw) != terminator(want.Raw) {
		t.Errorf("event %q", got.Raw)
	}
	g, w := shape(t, got.Data, nil), shape(t, want.Data, nil)
	if strings.Join(g, " ") != strings.Join(w, " ") {
		t.Errorf("layout differs from the capture\n got %v\nwant %v", g, w)
	}
	if gjson.GetBytes(got.Data, "error.type").String() != "overloaded_error" {
		t.Errorf("error %s", got.Data)
	}
}
