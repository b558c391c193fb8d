package wire_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/wire"
)

func TestDetectFraming(t *testing.T) {
	tests := []struct {
		ct   string
		want wire.Framing
	}{
		{"text/event-stream", wire.FramingSSE},
		{"text/event-stream; charset=utf-8", wire.FramingSSE},
		{"Text/Event-Stream;charset=UTF-8", wire.FramingSSE},
		{"application/x-ndjson", wire.FramingNDJSON},
		{"application/ndjson", wire.FramingNDJSON},
		{"application/jsonl", wire.FramingNDJSON},
		{"application/x-ndjson; charset=utf-8", wire.FramingNDJSON},
		{"application/json", wire.FramingNone},
		{"application/json; charset=UTF-8", wire.FramingNone},
		{"text/plain", wire.FramingNone},
		{"", wire.FramingNone},
		{"text/event-stream; charset=", wire.FramingSSE}, // unparsable parameter
		{";;;", wire.FramingNone},
	}
	for _, tt := range tests {
		if got := wire.DetectFraming(tt.ct); got != tt.want {
			t.Errorf("DetectFraming(%q) = %v, want %v", tt.ct, got, tt.want)
		}
	}
}

// pushChunks feeds body to a Splitter in chunks of the given sizes (cycled)
// and returns every event, End's included.
func pushChunks(f wire.Framing, body []byte, sizes []int) []wire.Event {
	s := wire.NewSplitter(f)
	var evs []wire.Event
	for i := 0; len(body) > 0; i++ {
		n := min(sizes[i%len(sizes)], len(body))
		chunk := bytes.Clone(body[:n])
		evs = append(evs, s.Push(chunk)...)
		for j := range chunk { // the Splitter must not keep chunk
			chunk[j] = '#'
		}
		body = body[n:]
	}
	return append(evs, s.End()...)
}

func concatRaw(evs []wire.Event) []byte {
	var b []byte
	for _, ev := range evs {
		b = append(b, ev.Raw...)
	}
	return b
}

func TestSplitCaptured(t *testing.T) {
	tests := []struct {
		file       string
		framing    wire.Framing
		events     int    // all events
		withData   int    // events with data
		firstName  string // Name of the first event
		lastData   string // prefix of the last event's Data
		dataEquals bool   // each event is exactly "data: <Data>\n\n" (or the event line before it)
	}{
		{"openai-chat-stream-toolcalls.sse", wire.FramingSSE, 9, 9, "", "[DONE]", true},
		{"openai-chat-stream-parallel-toolcalls.sse", wire.FramingSSE, 8, 8, "", "[DONE]", true},
		{"openai-chat-stream-text-after-toolresult.sse", wire.FramingSSE, 12, 12, "", "[DONE]", true},
		// The leading space makes the first line's field " data", which SSE ignores.
		{"openrouter-chat-stream-toolcalls-quirks.sse", wire.FramingSSE, 6, 5, "", "[DONE]", false},
		{"openai-responses-stream-functioncall.sse", wire.FramingSSE, 17, 17, "response.created", `{"type":"response.completed"`, true},
		{"openai-responses-stream-text-after-output.sse", wire.FramingSSE, 22, 22, "response.created", `{"type":"response.completed"`, true},
		{"anthropic-messages-stream-tooluse.sse", wire.FramingSSE, 85, 85, "message_start", `{"type":"message_stop"`, true},
		{"anthropic-messages-stream-parallel-tooluse.sse", wire.FramingSSE, 10, 10, "message_start", `{"type":"message_stop"`, true},
		{"anthropic-messages-stream-error-overloaded.sse", wire.FramingSSE, 1, 1, "error", `{"type":"error"`, true},
		{"gemini-streamgeneratecontent-sse-functioncall.sse", wire.FramingSSE, 2, 2, "", `{"candidates": [{"content": {"parts": [{"text": ""}]`, false},
		{"ollama-api-chat-stream-toolcalls.ndjson", wire.FramingNDJSON, 2, 2, "", `{"model":"llama3.2"`, false},
		{"aimock/openai-chat-stream-toolcall.sse", wire.FramingSSE, 7, 7, "", "[DONE]", true},
		{"aimock/openai-responses-stream-functioncall.sse", wire.FramingSSE, 8, 8, "response.created", `{"type":"response.completed"`, true},
		{"aimock/anthropic-messages-stream-tooluse.sse", wire.FramingSSE, 7, 7, "message_start", `{"type":"message_stop"}`, true},
		{"aimock/gemini-stream-functioncall.sse", wire.FramingSSE, 1, 1, "", `{"candidates":`, true},
		{"aimock/ollama-chat-stream-toolcall.ndjson", wire.FramingNDJSON, 2, 2, "", `{"model":"llama3.2"`, false},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			body := mustRead(t, tt.file)
			evs := wire.Split(tt.framing, body)
			if got := concatRaw(evs); !bytes.Equal(got, body) {
				t.Fatalf("Raw concatenation differs from the file (%d bytes, want %d)", len(got), len(body))
			}
			withData := 0
			for _, ev := range evs {
				if ev.Data != nil {
					withData++
				}
			}
			if len(evs) != tt.events || withData != tt.withData {
				t.Errorf("got %d events (%d with data), want %d (%d)", len(evs), withData, tt.events, tt.withData)
			}
			if len(evs) == 0 {
				return
			}
			if got := evs[0].Name; got != tt.firstName {
				t.Errorf("first event name = %q, want %q", got, tt.firstName)
			}
			if got := string(evs[len(evs)-1].Data); !strings.HasPrefix(got, tt.lastData) {
				t.Errorf("last event data = %.60q…, want prefix %q", got, tt.lastData)
			}
			for i, ev := range evs {
				if tt.framing == wire.FramingSSE && tt.dataEquals {
					want := "data: " + string(ev.Data) + "\n\n"
					if ev.Name != "" {
						want = "event: " + ev.Name + "\n" + want
					}
					if string(ev.Raw) != want {
						t.Errorf("event %d: Raw = %q, want %q", i, ev.Raw, want)
					}
				}
				if tt.framing == wire.FramingNDJSON && string(ev.Raw) != string(ev.Data)+"\n" {
					t.Errorf("line %d: Raw = %q, Data = %q", i, ev.Raw, ev.Data)
				}
			}
			// Any chunking gives the same events.
			rng := rand.New(rand.NewPCG(1, uint64(len(body))))
			random := make([]int, 64)
			for i := range random {
				random[i] = 1 + rng.IntN(40)
			}
			for _, sizes := range [][]int{{1}, {2}, {3}, {7}, {64}, {1, 5, 2, 13}, random, {len(body)}} {
				if got := pushChunks(tt.framing, body, sizes); !reflect.DeepEqual(got, evs) {
					t.Errorf("chunks %v: events differ from Split", sizes[:min(len(sizes), 4)])
				}
			}
			// A single cut gives the same events: at every byte near an event
			// boundary (where a CRLF may be split), elsewhere at a stride.
			cuts := map[int]bool{}
			for cut := 1; cut < len(body); cut += 1 + len(body)/400 {
				cuts[cut] = true
			}
			end := 0
			for _, e := range evs {
				end += len(e.Raw)
				for d := -4; d <= 4; d++ {
					if c := end + d; c > 0 && c < len(body) {
						cuts[c] = true
					}
				}
			}
			for cut := range cuts {
				s := wire.NewSplitter(tt.framing)
				got := s.Push(body[:cut])
				got = append(got, s.Push(body[cut:])...)
				got = append(got, s.End()...)
				if !reflect.DeepEqual(got, evs) {
					t.Fatalf("cut at %d: events differ from Split", cut)
				}
			}
		})
	}
	for _, f := range capturedFiles(t, "*.sse", "*.ndjson") {
		if !seen[f] {
			t.Errorf("captured file %s has no framing test", f)
		}
	}
}

func ev(raw, name, data string) wire.Event {
	e := wire.Event{Raw: []byte(raw), Name: name}
	if data != "\x00" {
		e.Data = []byte(data)
	}
	return e
}

// noData marks an event without a data field.
const noData = "\x00"

func TestSplitEdgeCases(t *testing.T) {
	tests := []struct {
		name    string
		framing wire.Framing
		body    string
		want    []wire.Event
	}{
		{"lf", wire.FramingSSE, "data: a\n\ndata: b\n\n",
			[]wire.Event{ev("data: a\n\n", "", "a"), ev("data: b\n\n", "", "b")}},
		{"crlf", wire.FramingSSE, "data: a\r\n\r\ndata: b\r\n\r\n",
			[]wire.Event{ev("data: a\r\n\r\n", "", "a"), ev("data: b\r\n\r\n", "", "b")}},
		{"cr", wire.FramingSSE, "event: x\rdata: a\r\rdata: b\r\r",
			[]wire.Event{ev("event: x\rdata: a\r\r", "x", "a"), ev("data: b\r\r", "", "b")}},
		{"mixed endings", wire.FramingSSE, "data: a\r\ndata: b\rdata: c\n\r\n",
			[]wire.Event{ev("data: a\r\ndata: b\rdata: c\n\r\n", "", "a\nb\nc")}},
		{"multi-line data", wire.FramingSSE, "data: {\"a\":\ndata: 1}\n\n",
			[]wire.Event{ev("data: {\"a\":\ndata: 1}\n\n", "", "{\"a\":\n1}")}},
		{"comments id retry", wire.FramingSSE, ": hello\nid: 7\nretry: 1000\nevent: e\ndata:x\n\n",
			[]wire.Event{ev(": hello\nid: 7\nretry: 1000\nevent: e\ndata:x\n\n", "e", "x")}},
		{"comment-only block", wire.FramingSSE, ": keep-alive\n\ndata: a\n\n",
			[]wire.Event{ev(": keep-alive\n\n", "", noData), ev("data: a\n\n", "", "a")}},
		{"only one space stripped", wire.FramingSSE, "data:  two\n\n",
			[]wire.Event{ev("data:  two\n\n", "", " two")}},
		{"field without colon", wire.FramingSSE, "data\n\n",
			[]wire.Event{ev("data\n\n", "", "")}},
		{"empty data lines", wire.FramingSSE, "data:\ndata:\n\n",
			[]wire.Event{ev("data:\ndata:\n\n", "", "\n")}},
		{"stray blank lines", wire.FramingSSE, "\n\ndata: a\n\n\n",
			[]wire.Event{ev("\n", "", noData), ev("\n", "", noData), ev("data: a\n\n", "", "a"), ev("\n", "", noData)}},
		{"bom", wire.FramingSSE, "\ufeffdata: a\n\n\ufeffdata: b\n\n",
			[]wire.Event{ev("\ufeffdata: a\n\n", "", "a"), ev("\ufeffdata: b\n\n", "", noData)}},
		{"last event name wins", wire.FramingSSE, "event: a\nevent: b\ndata: x\n\n",
			[]wire.Event{ev("event: a\nevent: b\ndata: x\n\n", "b", "x")}},
		{"truncated tail", wire.FramingSSE, "data: a\n\ndata: {\"b\":",
			[]wire.Event{ev("data: a\n\n", "", "a"), ev("data: {\"b\":", "", "{\"b\":")}},
		{"tail without blank line", wire.FramingSSE, "data: a\n",
			[]wire.Event{ev("data: a\n", "", "a")}},
		{"final cr ends the event", wire.FramingSSE, "data: a\r\r",
			[]wire.Event{ev("data: a\r\r", "", "a")}},
		{"empty body", wire.FramingSSE, "", nil},
		{"ndjson", wire.FramingNDJSON, "{\"a\":1}\n{\"b\":2}\r\n\n{\"c\"",
			[]wire.Event{ev("{\"a\":1}\n", "", "{\"a\":1}"), ev("{\"b\":2}\r\n", "", "{\"b\":2}"), ev("\n", "", ""), ev("{\"c\"", "", "{\"c\"")}},
		{"ndjson cr is not a line end", wire.FramingNDJSON, "a\rb\n",
			[]wire.Event{ev("a\rb\n", "", "a\rb")}},
		{"none", wire.FramingNone, "{\"a\":\n1}\n\n{}",
			[]wire.Event{ev("{\"a\":\n1}\n\n{}", "", "{\"a\":\n1}\n\n{}")}},
		{"none empty", wire.FramingNone, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := wire.Split(tt.framing, []byte(tt.body))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Split = %s\nwant    %s", fmtEvents(got), fmtEvents(tt.want))
			}
			for _, sizes := range [][]int{{1}, {2}, {3}} {
				if got := pushChunks(tt.framing, []byte(tt.body), sizes); !reflect.DeepEqual(got, tt.want) {
					t.Errorf("chunks of %v: %s\nwant %s", sizes, fmtEvents(got), fmtEvents(tt.want))
				}
			}
		})
	}
}

func fmtEvents(evs []wire.Event) string {
	var b strings.Builder
	for _, e := range evs {
		d := "<nil>"
		if e.Data != nil {
			d = fmt.Sprintf("%q", e.Data)
		}
		fmt.Fprintf(&b, "{Raw:%q Name:%q Data:%s} ", e.Raw, e.Name, d)
	}
	return b.String()
}

func TestSplitterRest(t *testing.T) {
	s := wire.NewSplitter(wire.FramingSSE)
	steps := []struct {
		push   string
		events []string // Raw of the events returned
		rest   string
	}{
		{"data: a\n", nil, "data: a\n"},
		{"\ndata: b", []string{"data: a\n\n"}, "data: b"},
		{"\r", nil, "data: b\r"}, // a CR at the end waits for a possible LF
		{"\n\r", nil, "data: b\r\n\r"},
		{"\nevent: c\n\ndata", []string{"data: b\r\n\r\n", "event: c\n\n"}, "data"},
	}
	for i, st := range steps {
		got := s.Push([]byte(st.push))
		var raws []string
		for _, e := range got {
			raws = append(raws, string(e.Raw))
		}
		if !reflect.DeepEqual(raws, st.events) {
			t.Errorf("step %d: Push(%q) events %q, want %q", i, st.push, raws, st.events)
		}
		if r := string(s.Rest()); r != st.rest {
			t.Errorf("step %d: Rest() = %q, want %q", i, r, st.rest)
		}
	}
	end := s.End()
	if len(end) != 1 || string(end[0].Raw) != "data" || string(end[0].Data) != "" || end[0].Data == nil {
		t.Errorf("End() = %s, want the tail \"data\" as an event with empty data", fmtEvents(end))
	}
	if r := s.Rest(); len(r) != 0 {
		t.Errorf("Rest() after End = %q, want empty", r)
	}
	// End resets: the Splitter serves a new stream.
	if got := s.Push([]byte("data: z\n\n")); len(got) != 1 || string(got[0].Data) != "z" {
		t.Errorf("Push after End = %s", fmtEvents(got))
	}
}

func TestFramingString(t *testing.T) {
	for f, want := range map[wire.Framing]string{wire.FramingNone: "none", wire.FramingSSE: "sse", wire.FramingNDJSON: "ndjson", 9: "none"} {
		if got := f.String(); got != want {
			t.Errorf("Framing(%d).String() = %q, want %q", f, got, want)
		}
	}
}

func TestParseFraming(t *testing.T) {
	for _, f := range []wire.Framing{wire.FramingSSE, wire.FramingNDJSON} {
		if got, ok := wire.ParseFraming(f.String()); !ok || got != f {
			t.Errorf("ParseFraming(%q) = %v, %v; want %v", f.String(), got, ok, f)
		}
	}
	if got, ok := wire.ParseFraming(""); !ok || got != wire.FramingNone {
		t.Errorf(`ParseFraming("") = %v, %v; want none`, got, ok)
	}
	for _, name := range []string{"none", "SSE", "json", " sse"} {
		if _, ok := wire.ParseFraming(name); ok {
			t.Errorf("ParseFraming(%q) accepted it", name)
		}
	}
}
