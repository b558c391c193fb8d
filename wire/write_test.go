package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/llmproxy/llmproxy/wire"
)

// form is one way a kind is written: whole or streamed, and for Gemini
// streams SSE or the JSON array.
type form struct {
	name string
	kind wire.Kind
	opts wire.WriteOptions
}

// forms lists every kind × streamed/not the writers support.
func forms() []form {
	var out []form
	for _, k := range []wire.Kind{wire.KindOpenAIChat, wire.KindOpenAIResponses, wire.KindAnthropicMessages, wire.KindGemini, wire.KindOllama, wire.KindBedrockConverse} {
		out = append(out,
			form{string(k) + "/json", k, wire.WriteOptions{}},
			form{string(k) + "/stream", k, wire.WriteOptions{Stream: true, IncludeUsage: true, Obfuscation: true}})
	}
	return append(out, form{"gemini/json-array", wire.KindGemini, wire.WriteOptions{Stream: true, JSONArray: true}})
}

// framing is how a written answer is read back: by its Content-Type.
func framing(w wire.Written) wire.Framing {
	return wire.DetectFraming(w.Header.Get("Content-Type"))
}

var created = time.Unix(1700000000, 0)

// answers are the contents the round trip covers.
var answers = map[string]wire.Answer{
	"text": {Model: "gpt-4o-mini", ID: "chatcmpl-weather-1", Created: created,
		Text: "Paris is sunny, 21 °C.\nEnjoy \"it\" <b>&</b>!", Usage: wire.Usage{Input: 12, Output: 9}},
	"one call": {Model: "claude-sonnet-4-6", ID: "msg_weather-1", Created: created,
		ToolCalls: []wire.ToolCall{{ID: "call_paris", Name: "weather", Arguments: []byte(`{"location": "Paris", "unit": "celsius"}`)}},
		Usage:     wire.Usage{Input: 40, Output: 17}},
	"parallel calls": {Model: "gemini-2.5-flash", ID: "resp_weather-2", Created: created,
		ToolCalls: []wire.ToolCall{
			{ID: "call_weather", Name: "weather", Arguments: []byte(`{"location":"Paris","days":[1,2,3],"nested":{"a":null,"b":1.50}}`)},
			{ID: "call_weather_2", Name: "weather", Arguments: []byte(`{"location":"Tōkyō 東京"}`)},
			{ID: "call_time", Name: "current_time"},
		},
		Usage: wire.Usage{Input: 88, Output: 51}},
	"reasoning": {Model: "o4-mini", ID: "chatcmpl-think-1", Created: created,
		Reasoning: "The user asks about Paris.\n\nI should answer briefly.", Text: "It is sunny.",
		Usage: wire.Usage{Input: 20, Output: 30, Reasoning: 12}},
	"reasoning and call": {Model: "o4-mini", ID: "resp_think-2", Created: created,
		Reasoning: "Weather needs the tool.", Text: "Let me check.",
		ToolCalls: []wire.ToolCall{{ID: "call_weather", Name: "weather", Arguments: []byte(`{"location":"Paris"}`)}},
		Usage:     wire.Usage{Input: 20, Output: 30}},
	"length": {Model: "m", ID: "x-1", Created: created, Text: "It is sunny and", Finish: wire.FinishLength,
		Usage: wire.Usage{Input: 5, Output: 4}},
	"empty": {Model: "m", ID: "x-2", Created: created},
}

// wantFinish is the finish reason an answer reads back as.
func wantFinish(a wire.Answer) wire.Finish {
	f := a.Finish
	if f == "" {
		f = wire.FinishStop
		if len(a.ToolCalls) > 0 {
			f = wire.FinishToolCalls
		}
	}
	return f
}

// compactArgs compacts arguments JSON, "{}" when empty.
func compactArgs(t testing.TB, b []byte) string {
	t.Helper()
	if len(bytes.TrimSpace(b)) == 0 {
		return "{}"
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatalf("arguments %q: %v", b, err)
	}
	return buf.String()
}

// checkRoundTrip fails the test unless r is what a says. A wire that does
// not count reasoning tokens apart reads none.
func checkRoundTrip(t testing.TB, what string, kind wire.Kind, a wire.Answer, r wire.Response, finish wire.Finish) {
	t.Helper()
	if kind == wire.KindAnthropicMessages || kind == wire.KindOllama || kind == wire.KindBedrockConverse {
		a.Usage.Reasoning = 0
	}
	if r.Text != a.Text || r.Reasoning != a.Reasoning {
		t.Errorf("%s: text %q reasoning %q, want %q and %q", what, r.Text, r.Reasoning, a.Text, a.Reasoning)
	}
	if r.Finish != finish || r.Usage != a.Usage || r.Error != "" {
		t.Errorf("%s: finish %q usage %+v error %q, want %q and %+v", what, r.Finish, r.Usage, r.Error, finish, a.Usage)
	}
	if len(r.ToolCalls) != len(a.ToolCalls) {
		t.Fatalf("%s: %d tool calls, want %d: %+v", what, len(r.ToolCalls), len(a.ToolCalls), r.ToolCalls)
	}
	for i, c := range r.ToolCalls {
		w := a.ToolCalls[i]
		if c.ID != w.ID || c.Name != w.Name || compactArgs(t, c.Arguments) != compactArgs(t, w.Arguments) {
			t.Errorf("%s: call %d = %s %s %s, want %s %s %s", what, i, c.ID, c.Name, c.Arguments, w.ID, w.Name, w.Arguments)
		}
	}
}

func TestWriteRoundTrip(t *testing.T) {
	for _, f := range forms() {
		for name, a := range answers {
			t.Run(f.name+"/"+name, func(t *testing.T) {
				w, err := wire.Write(f.kind, a, f.opts)
				if err != nil {
					t.Fatalf("Write: %v", err)
				}
				if w.Streamed() != f.opts.Stream || w.Status != 200 {
					t.Fatalf("streamed %v status %d, want %v 200", w.Streamed(), w.Status, f.opts.Stream)
				}
				if w.Header.Get("Content-Length") != "" {
					t.Errorf("Content-Length header %q", w.Header.Get("Content-Length"))
				}
				r, err := wire.ParseResponse(f.kind, framing(w), w.Bytes())
				if err != nil {
					t.Fatalf("ParseResponse: %v\n%s", err, w.Bytes())
				}
				finish := wantFinish(a)
				if finish == wire.FinishStop && len(a.ToolCalls) > 0 && f.kind != wire.KindOpenAIChat && f.kind != wire.KindAnthropicMessages {
					finish = wire.FinishToolCalls
				}
				checkRoundTrip(t, "read back", f.kind, a, r, finish)

				again, _ := wire.Write(f.kind, a, f.opts)
				if !reflect.DeepEqual(again, w) {
					t.Errorf("the same answer written twice differs")
				}
			})
		}
	}
}

// TestWriteStreamEvents checks the events of each stream: each is framed
// on its own, their Raw joined is the body, and a prefix of them reads as
// the start of the answer (what a client sees when a stream is cut).
func TestWriteStreamEvents(t *testing.T) {
	a := answers["parallel calls"]
	a.Text = "Checking the weather for you now."
	for _, f := range forms() {
		if !f.opts.Stream {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			w, err := wire.Write(f.kind, a, f.opts)
			if err != nil {
				t.Fatal(err)
			}
			fr := framing(w)
			if fr != wire.FramingNone {
				split := wire.Split(fr, w.Bytes())
				if len(split) != len(w.Events) {
					t.Fatalf("%d events written, Split finds %d", len(w.Events), len(split))
				}
				for i, e := range w.Events {
					if !bytes.Equal(split[i].Raw, e.Raw) || split[i].Name != e.Name || !bytes.Equal(split[i].Data, e.Data) {
						t.Errorf("event %d: written %q (name %q, data %q), split %q", i, e.Raw, e.Name, e.Data, split[i].Raw)
					}
				}
			}
			for _, e := range w.Events {
				if len(e.Data) > 0 && string(e.Data) != "[DONE]" && !json.Valid(e.Data) {
					t.Errorf("event data is not JSON: %q", e.Data)
				}
			}
			if fr == wire.FramingNone {
				return // a cut JSON array is not JSON
			}
			var prefix []byte
			for i, e := range w.Events[:len(w.Events)-1] {
				prefix = append(prefix, e.Raw...)
				r, err := wire.ParseResponse(f.kind, fr, prefix)
				if err != nil {
					t.Fatalf("after %d events: %v", i+1, err)
				}
				if !strings.HasPrefix(a.Text, r.Text) {
					t.Fatalf("after %d events: text %q is not a prefix of %q", i+1, r.Text, a.Text)
				}
			}
		})
	}
}

func TestWriteChunking(t *testing.T) {
	a := wire.Answer{Model: "m", ID: "chatcmpl-1", Text: "Il fait beau à Paris  aujourd'hui."}
	tests := []struct {
		chunk int
		want  []string
	}{
		{0, []string{"Il", " fait", " beau", " à", " Paris", "  aujourd'hui."}},
		{4, []string{"Il f", "ait ", "beau", " à P", "aris", "  au", "jour", "d'hu", "i."}},
		{100, []string{a.Text}},
	}
	for _, tt := range tests {
		w, err := wire.Write(wire.KindOpenAIChat, a, wire.WriteOptions{Stream: true, Chunk: tt.chunk})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range w.Events {
			r, _ := wire.ParseResponse(wire.KindOpenAIChat, wire.FramingSSE, e.Raw)
			if r.Text != "" {
				got = append(got, r.Text)
			}
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("chunk %d: pieces %q, want %q", tt.chunk, got, tt.want)
		}
	}
}

func TestWriteChatUsageOnlyWhenAsked(t *testing.T) {
	w, err := wire.Write(wire.KindOpenAIChat, answers["text"], wire.WriteOptions{Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	body := string(w.Bytes())
	if strings.Contains(body, `"usage"`) || strings.Contains(body, "obfuscation") {
		t.Errorf("usage or obfuscation written unasked:\n%s", body)
	}
	r, _ := wire.ParseResponse(wire.KindOpenAIChat, wire.FramingSSE, w.Bytes())
	if r.Usage != (wire.Usage{}) || r.Text != answers["text"].Text {
		t.Errorf("read %+v", r)
	}
}

func TestWriteRejects(t *testing.T) {
	call := func(args string) wire.Answer {
		return wire.Answer{ToolCalls: []wire.ToolCall{{Name: "f", Arguments: []byte(args)}}}
	}
	tests := []struct {
		name string
		kind wire.Kind
		a    wire.Answer
		o    wire.WriteOptions
		want error
	}{
		{"array arguments", wire.KindOpenAIChat, call(`[1]`), wire.WriteOptions{}, wire.ErrInvalidAnswer},
		{"truncated arguments", wire.KindAnthropicMessages, call(`{"a":`), wire.WriteOptions{}, wire.ErrInvalidAnswer},
		{"non-UTF-8 arguments", wire.KindGemini, call("{\"a\":\"\xff\"}"), wire.WriteOptions{}, wire.ErrInvalidAnswer},
		{"negative usage", wire.KindOllama, wire.Answer{Usage: wire.Usage{Output: -1}}, wire.WriteOptions{}, wire.ErrInvalidAnswer},
		{"reasoning beyond output", wire.KindGemini, wire.Answer{Usage: wire.Usage{Output: 3, Reasoning: 4}}, wire.WriteOptions{}, wire.ErrInvalidAnswer},
		{"NaN embedding", wire.KindEmbeddings, wire.Answer{Embedding: []float64{math.NaN()}}, wire.WriteOptions{}, wire.ErrInvalidAnswer},
		{"infinite base64 embedding", wire.KindEmbeddings, wire.Answer{Embedding: []float64{math.Inf(1)}}, wire.WriteOptions{Base64: true}, wire.ErrInvalidAnswer},
		{"streamed embedding", wire.KindEmbeddings, wire.Answer{}, wire.WriteOptions{Stream: true}, wire.ErrUnsupported},
		{"generic", wire.KindGeneric, wire.Answer{}, wire.WriteOptions{}, wire.ErrUnsupported},
		{"unknown kind", "future", wire.Answer{}, wire.WriteOptions{}, wire.ErrUnsupported},
	}
	for _, tt := range tests {
		if _, err := wire.Write(tt.kind, tt.a, tt.o); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
	_, err := wire.Write(wire.KindOpenAIChat, call(`[1]`), wire.WriteOptions{})
	if err == nil || !strings.Contains(err.Error(), "tool call 0 (f)") {
		t.Errorf("error %v does not name the call", err)
	}
}

func TestWriteEmbeddings(t *testing.T) {
	a := wire.Answer{Model: "text-embedding-3-small", Embedding: []float64{0.5, -0.25, 1e-7, 3}, Usage: wire.Usage{Input: 4}}
	w, err := wire.Write(wire.KindEmbeddings, a, wire.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Object string
		Data   []struct {
			Object    string
			Index     int
			Embedding []float64
		}
		Model string
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		}
	}
	if err := json.Unmarshal(w.Body, &got); err != nil {
		t.Fatalf("%v\n%s", err, w.Body)
	}
	if got.Object != "list" || len(got.Data) != 1 || !reflect.DeepEqual(got.Data[0].Embedding, a.Embedding) ||
		got.Model != a.Model || got.Usage.PromptTokens != 4 || got.Usage.TotalTokens != 4 {
		t.Errorf("embeddings body %s", w.Body)
	}
	if w.Header.Get("Content-Type") != "application/json" || !bytes.HasSuffix(w.Body, []byte("}\n")) {
		t.Errorf("header %v, body end %q", w.Header, w.Body[len(w.Body)-3:])
	}
}

func TestOptionsFor(t *testing.T) {
	tests := []struct {
		kind wire.Kind
		path string
		body string
		want wire.WriteOptions
	}{
		{wire.KindOpenAIChat, "/v1/chat/completions", `{"stream":true,"stream_options":{"include_usage":true}}`,
			wire.WriteOptions{Stream: true, IncludeUsage: true, Obfuscation: true}},
		{wire.KindOpenAIChat, "/v1/chat/completions", `{"stream":true,"stream_options":{"include_obfuscation":false}}`,
			wire.WriteOptions{Stream: true}},
		{wire.KindOpenAIResponses, "/v1/responses", `{"input":"hi"}`, wire.WriteOptions{Obfuscation: true}},
		{wire.KindAnthropicMessages, "/v1/messages", `{"stream":true,"messages":[]}`, wire.WriteOptions{Stream: true, Obfuscation: true}},
		{wire.KindGemini, "/v1beta/models/g:streamGenerateContent?alt=sse&key=k", `{"contents":[]}`, wire.WriteOptions{Stream: true, Obfuscation: true}},
		{wire.KindGemini, "/v1beta/models/g:streamGenerateContent", `{"contents":[]}`, wire.WriteOptions{Stream: true, JSONArray: true, Obfuscation: true}},
		{wire.KindGemini, "/v1beta/models/g:generateContent", `{"contents":[]}`, wire.WriteOptions{Obfuscation: true}},
		{wire.KindOllama, "/api/chat", `{"messages":[]}`, wire.WriteOptions{Stream: true, Obfuscation: true}},
		{wire.KindOllama, "/api/chat", `{"messages":[],"stream":false}`, wire.WriteOptions{Obfuscation: true}},
		{wire.KindOllama, "/api/generate", `{"prompt":"hi","stream":false}`, wire.WriteOptions{OllamaGenerate: true, Obfuscation: true}},
		{wire.KindEmbeddings, "/v1/embeddings", `{"input":"x","encoding_format":"base64"}`, wire.WriteOptions{Base64: true, Obfuscation: true}},
	}
	for _, tt := range tests {
		got, err := wire.OptionsFor(tt.kind, tt.path, []byte(tt.body))
		if err != nil {
			t.Fatalf("%s %s: %v", tt.kind, tt.path, err)
		}
		tt.want.Request = []byte(tt.body)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s %s %s:\n got %+v\nwant %+v", tt.kind, tt.path, tt.body, got, tt.want)
		}
	}
	if _, err := wire.OptionsFor(wire.KindOpenAIChat, "/v1/chat/completions", []byte(`{"messages":`)); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("bad body: err = %v, want ErrMalformed", err)
	}
}

// TestWriteResponsesEchoesRequest checks that the Responses object repeats
// the request's settings, as OpenAI's does.
func TestWriteResponsesEchoesRequest(t *testing.T) {
	req := `{"model":"gpt-5.5","instructions":"Be brief.","store":false,"reasoning":{"effort":"low"},` +
		`"tools":[{"type":"function","name":"multiply","parameters":{"type":"object"}},{"type":"web_search"}],"tool_choice":"required","metadata":{"k":"v"}}`
	w, err := wire.Write(wire.KindOpenAIResponses, answers["text"], wire.WriteOptions{Request: []byte(req)})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(w.Body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"instructions": `"Be brief."`, "store": "false", "tool_choice": `"required"`, "metadata": `{"k":"v"}`,
		"tools": `[{"type":"function","description":null,"name":"multiply","parameters":{"type":"object"},"strict":true},{"type":"web_search"}]`,
	}
	for k, v := range want {
		if c := compactArgs(t, got[k]); c != v {
			t.Errorf("%s = %s, want %s", k, c, v)
		}
	}
	if c := compactArgs(t, got["reasoning"]); c != `{"effort":"low","summary":null}` {
		t.Errorf("reasoning = %s", c)
	}
}

func ExampleWrite() {
	a := wire.Answer{
		Model: "claude-sonnet-4-6", ID: "msg_weather-1", Created: time.Unix(1700000000, 0),
		Text:  "Sunny.",
		Usage: wire.Usage{Input: 12, Output: 3},
	}
	w, err := wire.Write(wire.KindAnthropicMessages, a, wire.WriteOptions{Stream: true})
	if err != nil {
		panic(err)
	}
	fmt.Println(w.Status, w.Header.Get("Content-Type"))
	for _, e := range w.Events {
		fmt.Println(e.Name)
	}
	// Output:
	// 200 text/event-stream; charset=utf-8
	// message_start
	// content_block_start
	// ping
	// content_block_delta
	// content_block_stop
	// message_delta
	// message_stop
}

// validUTF8 replaces each byte of s that is not part of valid UTF-8 with
// U+FFFD, as the writers do.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// FuzzWriteRoundTrip writes arbitrary answers in every form and reads them
// back: the writers never fail on a valid answer, and the reader returns
// exactly what was written.
func FuzzWriteRoundTrip(f *testing.F) {
	f.Add(uint8(0), uint8(0), "Paris is sunny.", "", "weather", `{"location":"Paris"}`, "call_1", uint8(1), uint8(0), uint16(10), uint16(5), uint16(0))
	f.Add(uint8(3), uint8(2), "a  b\n\tc \u2028 \"q\"", "think\n\nmore", "f", `{}`, "", uint8(3), uint8(1), uint16(0), uint16(0), uint16(0))
	f.Add(uint8(5), uint8(7), "", "why", "get_time", `not json`, "id", uint8(2), uint8(3), uint16(65535), uint16(1), uint16(1))
	f.Add(uint8(9), uint8(1), "\xff\xfe bad \xc3", "\xe2\x82", "n\xffm", `{"a":[1,{"b":"\u00e9"}]}`, "c\xff", uint8(1), uint8(2), uint16(3), uint16(300), uint16(120))
	fs := forms()
	f.Fuzz(func(t *testing.T, form, chunk uint8, text, reasoning, name, args, id string, ncalls, finish uint8, in, out, thought uint16) {
		// A stream costs a few hundred bytes per piece: bound the pieces so
		// that each run stays quick.
		if len(text)+len(reasoning)+len(args)+len(name)+len(id) > 512 {
			t.Skip("answer too long for a quick run")
		}
		fm := fs[int(form)%len(fs)]
		fm.opts.Chunk = int(chunk % 8)
		if !utf8.ValidString(args) || !json.Valid([]byte(args)) || !strings.HasPrefix(strings.TrimSpace(args), "{") {
			b, _ := json.Marshal(map[string]string{"v": args})
			args = string(b)
		}
		a := wire.Answer{Model: "m", ID: id, Created: created, Text: text, Reasoning: reasoning,
			Finish: []wire.Finish{"", wire.FinishStop, wire.FinishLength, wire.FinishToolCalls}[finish%4],
			Usage:  wire.Usage{Input: int(in), Output: int(out), Reasoning: int(thought) % (int(out) + 1)}}
		for i := range int(ncalls % 4) {
			a.ToolCalls = append(a.ToolCalls, wire.ToolCall{ID: fmt.Sprintf("%s_%d", id, i), Name: name, Arguments: []byte(args)})
		}
		w, err := wire.Write(fm.kind, a, fm.opts)
		if err != nil {
			t.Fatalf("%s: Write: %v", fm.name, err)
		}
		r, err := wire.ParseResponse(fm.kind, framing(w), w.Bytes())
		if err != nil {
			t.Fatalf("%s: ParseResponse: %v\n%s", fm.name, err, w.Bytes())
		}
		want := a
		want.Text, want.Reasoning = validUTF8(text), validUTF8(reasoning)
		want.ToolCalls = nil
		for _, c := range a.ToolCalls {
			want.ToolCalls = append(want.ToolCalls, wire.ToolCall{ID: validUTF8(c.ID), Name: validUTF8(c.Name), Arguments: c.Arguments})
		}
		finishWant := wantFinish(a)
		switch fm.kind {
		case wire.KindGemini, wire.KindOllama, wire.KindOpenAIResponses:
			// These wires say "stop" (or "completed") for tool calls too.
			if finishWant == wire.FinishStop || finishWant == wire.FinishToolCalls {
				finishWant = wire.FinishStop
				if len(a.ToolCalls) > 0 {
					finishWant = wire.FinishToolCalls
				}
			}
		}
		checkRoundTrip(t, fm.name, fm.kind, want, r, finishWant)
	})
}
