package wire

import (
	"bytes"
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
