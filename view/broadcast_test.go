package view

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
)

// logSource is a Source whose log the test writes.
type logSource struct {
	CassetteSource
	mu      sync.Mutex
	entries []LogEntry
	changed chan struct{}
}

func (s *logSource) add() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = append(s.entries, LogEntry{Seq: uint64(len(s.entries) + 1)})
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *logSource) Log(_ context.Context, after uint64, limit int) ([]LogEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.entries[min(after, uint64(len(s.entries))):]
	return append([]LogEntry(nil), out[max(0, len(out)-limit):]...), nil
}

func (s *logSource) LogChanged() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// A stream that stops reading is dropped once streamDepth batches wait for
// it: the log goes on being added to and handed to the other streams, in
// order, and the stalled stream holds no more than streamDepth batches.
func TestHubDropsAStalledStream(t *testing.T) {
	src := &logSource{changed: make(chan struct{})}
	closed := make(chan struct{})
	defer close(closed)
	b := &hub{src: src, closed: closed, log: slog.New(slog.DiscardHandler),
		render: func(buf *bytes.Buffer, e LogEntry) error { _, err := fmt.Fprintf(buf, "%d;", e.Seq); return err }}
	fast, _ := b.subscribe()
	stalled, _ := b.subscribe()
	defer b.unsubscribe(fast)
	const entries = 4 * streamDepth
	var got bytes.Buffer
	for n := 1; n <= entries; n++ {
		src.add() // a request's entry: never waits for a stream
		for want := fmt.Sprintf("%d;", n); !bytes.HasSuffix(got.Bytes(), []byte(want)); {
			batch, ok := <-fast.ch
			if !ok {
				t.Fatalf("the stream that reads was dropped at entry %d", n)
			}
			for _, d := range batch {
				got.Write(d.event)
			}
		}
	}
	var want bytes.Buffer
	for n := 1; n <= entries; n++ {
		fmt.Fprintf(&want, "%d;", n)
	}
	if got.String() != want.String() {
		t.Errorf("the stream that reads got %q, want %q", got.String(), want.String())
	}
	held := 0
	for range stalled.ch { // ends: the hub closed it
		held++
	}
	if held > streamDepth {
		t.Errorf("the stalled stream held %d batches, want at most %d", held, streamDepth)
	}
	b.mu.Lock()
	_, kept := b.subs[stalled]
	b.mu.Unlock()
	if kept {
		t.Error("the hub still hands entries to the stalled stream")
	}
}
