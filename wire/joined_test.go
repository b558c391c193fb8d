package wire

import (
	"bytes"
	"reflect"
	"testing"
)

// A chat stream's events lie side by side in one buffer: JoinedPrefix gives
// any prefix of them as the very bytes the events carry, and refuses once
// an event is not the writer's any more.
func TestJoinedPrefix(t *testing.T) {
	a := Answer{Model: "gpt-4o-mini", ID: "chatcmpl-1", Text: "Hello there, how are you today?",
		ToolCalls: []ToolCall{{ID: "call_1", Name: "weather", Arguments: []byte(`{"city":"Paris"}`)}}}
	w, err := Write(KindOpenAIChat, a, WriteOptions{Stream: true, Chunk: 5, IncludeUsage: true, Obfuscation: true})
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n <= len(w.Events); n++ {
		got, ok := w.JoinedPrefix(n)
		var want []byte
		for _, e := range w.Events[:n] {
			want = append(want, e.Raw...)
		}
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("JoinedPrefix(%d) = %q, %v; want %q", n, got, ok, want)
		}
	}
	if _, ok := w.JoinedPrefix(len(w.Events) + 1); ok {
		t.Error("JoinedPrefix past the last event")
	}
	if _, ok := w.JoinedPrefix(-1); ok {
		t.Error("JoinedPrefix(-1)")
	}
	changed := w
	changed.Events = append([]Event(nil), w.Events...)
	changed.Events[1].Raw = bytes.Clone(changed.Events[1].Raw)
	if _, ok := changed.JoinedPrefix(1); !ok {
		t.Error("the prefix before the changed event was refused")
	}
	if _, ok := changed.JoinedPrefix(2); ok {
		t.Error("a prefix holding a changed event was given")
	}
	whole, err := Write(KindOpenAIChat, a, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := whole.JoinedPrefix(0); ok {
		t.Error("an answer that does not stream has a joined prefix")
	}
}

// An answer written into WriteOptions.Buffer has the bytes of one written
// without: a buffer large enough is used (Written.Buffer is that memory,
// whatever it held before), one too small is not; writers that lay out
// nothing in a buffer of their own return none.
func TestWriteBuffer(t *testing.T) {
	a := Answer{Model: "gpt-4o-mini", ID: "chatcmpl-1", Text: "Hello \"there\", how are you today?",
		ToolCalls: []ToolCall{{ID: "call_1", Name: "weather", Arguments: []byte(`{"city": "Paris"}`)}}}
	for _, o := range []WriteOptions{{}, {Stream: true, Chunk: 5, IncludeUsage: true, Obfuscation: true}} {
		want, err := Write(KindOpenAIChat, a, o)
		if err != nil {
			t.Fatal(err)
		}
		if want.Buffer() == nil {
			t.Errorf("stream %v: no buffer of its own", o.Stream)
		}
		big := bytes.Repeat([]byte{'x'}, 64<<10)
		for _, buf := range [][]byte{big, big[:0], make([]byte, 0, 8)} {
			o.Buffer = buf
			got, err := Write(KindOpenAIChat, a, o)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("stream %v, buffer of %d bytes: %q, want %q", o.Stream, cap(buf), got.Bytes(), want.Bytes())
			}
			used := &got.Buffer()[:1][0] == &buf[:1][0]
			if used != (cap(buf) == len(big)) {
				t.Errorf("stream %v, buffer of %d bytes: used %v", o.Stream, cap(buf), used)
			}
		}
	}
	// Anthropic's stream is laid out in one buffer too, its events side by
	// side; its whole body is not.
	o := WriteOptions{Stream: true}
	want, err := Write(KindAnthropicMessages, a, o)
	if err != nil {
		t.Fatal(err)
	}
	if joined, ok := want.JoinedPrefix(len(want.Events)); !ok || !bytes.Equal(joined, want.Bytes()) {
		t.Error("the Anthropic stream's events are not side by side in its buffer")
	}
	big := bytes.Repeat([]byte{'x'}, 64<<10)
	for _, buf := range [][]byte{big, make([]byte, 0, 8)} {
		o.Buffer = buf
		got, err := Write(KindAnthropicMessages, a, o)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("Anthropic stream, buffer of %d bytes: %q, want %q", cap(buf), got.Bytes(), want.Bytes())
		}
		if used := &got.Buffer()[:1][0] == &buf[:1][0]; used != (cap(buf) == len(big)) {
			t.Errorf("Anthropic stream, buffer of %d bytes: used %v", cap(buf), used)
		}
	}
	w, err := Write(KindAnthropicMessages, a, WriteOptions{Buffer: big})
	if err != nil {
		t.Fatal(err)
	}
	if w.Buffer() != nil {
		t.Error("the Anthropic writer returned a buffer it does not lay a whole answer out in")
	}
}

// TestWriteEventBuffer: a chat stream laid out in a lent list of events,
// dirty, fitting or too small, has the same events as one in its own; the
// list is used when it holds them all.
func TestWriteEventBuffer(t *testing.T) {
	a := Answer{Model: "gpt-4o-mini", ID: "chatcmpl-1", Text: "Hello \"there\", how are you today?",
		ToolCalls: []ToolCall{{ID: "call_1", Name: "weather", Arguments: []byte(`{"city": "Paris"}`)}}}
	o := WriteOptions{Stream: true, Chunk: 5, IncludeUsage: true, Obfuscation: true}
	want, err := Write(KindOpenAIChat, a, o)
	if err != nil {
		t.Fatal(err)
	}
	dirty := make([]Event, 64)
	for i := range dirty {
		dirty[i] = Event{Name: "stale", Raw: []byte("x"), Data: []byte("y")}
	}
	n := len(want.Events)
	for _, evs := range [][]Event{dirty, dirty[:0], make([]Event, 0, n), make([]Event, 0, n-1)} {
		o.EventBuffer = evs
		got, err := Write(KindOpenAIChat, a, o)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Events, want.Events) {
			t.Errorf("list of %d events: %q, want %q", cap(evs), got.Events, want.Events)
		}
		used := &got.Events[:1][0] == &evs[:1][0]
		if used != (cap(evs) >= n) {
			t.Errorf("list of %d events for %d: used %v", cap(evs), n, used)
		}
	}
}
