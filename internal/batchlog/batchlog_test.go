package batchlog_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/internal/batchlog"
)

// recorder is an io.Writer that keeps every write apart.
type recorder struct {
	mu     sync.Mutex
	writes []string
	err    error
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return 0, r.err
	}
	r.writes = append(r.writes, string(p))
	return len(p), nil
}

func (r *recorder) all() (string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.writes, ""), len(r.writes)
}

const never = time.Hour // a delay no test waits for

func TestWritesWaitForFlushAndComeOutInOneWrite(t *testing.T) {
	var out recorder
	w := batchlog.New(&out, never)
	for i := range 100 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	if got, n := out.all(); n != 0 {
		t.Fatalf("before Flush, out got %d writes: %q", n, got)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got, n := out.all()
	if n != 1 {
		t.Errorf("Flush wrote %d times, want once", n)
	}
	if want := lines(0, 100); got != want {
		t.Errorf("out = %q, want %q", got, want)
	}
}

func TestDelayFlushes(t *testing.T) {
	var out recorder
	w := batchlog.New(&out, time.Millisecond)
	defer w.Close()
	fmt.Fprintf(w, "line 0\n")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got, _ := out.all(); got == "line 0\n" {
			return
		} else if got != "" {
			t.Fatalf("out = %q", got)
		}
		if time.Now().After(deadline) {
			t.Fatal("the line was not written 10 s after its 1 ms delay")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestDirectComesAfterWhatWasWrittenBefore(t *testing.T) {
	var out recorder
	w := batchlog.New(&out, never)
	d := w.Direct()
	fmt.Fprint(w, "log 1\n")
	fmt.Fprint(d, "direct 1\n")
	fmt.Fprint(w, "log 2\n")
	fmt.Fprint(w, "log 3\n")
	fmt.Fprint(d, "direct 2\n")
	got, _ := out.all()
	if want := "log 1\ndirect 1\nlog 2\nlog 3\ndirect 2\n"; got != want {
		t.Errorf("out = %q, want %q", got, want)
	}
}

func TestFullBufferIsWrittenByTheWriter(t *testing.T) {
	var out recorder
	w := batchlog.New(&out, never)
	line := strings.Repeat("x", 99) + "\n"
	total := 0
	for total < 10*batchlog.MaxBuffered {
		n, err := w.Write([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	got, n := out.all()
	if held := total - len(got); held >= batchlog.MaxBuffered {
		t.Errorf("the writer holds %d bytes, want under %d", held, batchlog.MaxBuffered)
	}
	if n < 9 {
		t.Errorf("out got %d writes of %d bytes, want at least 9", n, total)
	}
}

func TestCloseFlushesThenWritesGoStraightThrough(t *testing.T) {
	var out recorder
	w := batchlog.New(&out, never)
	fmt.Fprint(w, "before\n")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := out.all(); got != "before\n" {
		t.Fatalf("after Close, out = %q", got)
	}
	fmt.Fprint(w, "after\n")
	if got, _ := out.all(); got != "before\nafter\n" {
		t.Errorf("a write after Close: out = %q, want it at once", got)
	}
}

func TestErrorsAreKeptForFlushAndClose(t *testing.T) {
	broken := errors.New("broken pipe")
	out := recorder{err: broken}
	w := batchlog.New(&out, never)
	if _, err := fmt.Fprint(w, "lost\n"); err != nil {
		t.Fatalf("a held write returned %v", err)
	}
	if err := w.Flush(); !errors.Is(err, broken) {
		t.Errorf("Flush = %v, want %v", err, broken)
	}
	if err := w.Close(); !errors.Is(err, broken) {
		t.Errorf("Close = %v, want %v", err, broken)
	}
	if _, err := fmt.Fprint(w, "after\n"); !errors.Is(err, broken) {
		t.Errorf("a write after Close = %v, want %v", err, broken)
	}
}

func TestHandlerFlushesAtItsLevel(t *testing.T) {
	var out recorder
	w := batchlog.New(&out, never)
	text := slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}})
	log := slog.New(batchlog.Handler(text, w, slog.LevelWarn)).With("cassette", "a")
	log.Info("served")
	if got, _ := out.all(); got != "" {
		t.Fatalf("an info line was written at once: %q", got)
	}
	log.WithGroup("g").Warn("miss", "path", "/v1")
	got, _ := out.all()
	want := "level=INFO msg=served cassette=a\nlevel=WARN msg=miss cassette=a g.path=/v1\n"
	if got != want {
		t.Errorf("after a warning, out = %q, want %q", got, want)
	}
}

func TestConcurrentLinesStayWhole(t *testing.T) {
	var out bytes.Buffer // written only under the Writer's order
	w := batchlog.New(&out, 50*time.Microsecond)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				if i%100 == 0 {
					fmt.Fprintf(w.Direct(), "g%d direct %d\n", g, i)
					continue
				}
				fmt.Fprintf(w, "g%d line %d\n", g, i)
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	next := map[string]int{}
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if seen[l] {
			t.Fatalf("line %q twice", l)
		}
		seen[l] = true
		var g, i int
		var kind string
		if _, err := fmt.Sscanf(l, "g%d %s %d", &g, &kind, &i); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		key := fmt.Sprint(g)
		if i != next[key] {
			t.Fatalf("goroutine %d: line %d came after line %d", g, i, next[key]-1)
		}
		next[key] = i + 1
	}
	if len(seen) != 8*2000 {
		t.Errorf("%d lines, want %d", len(seen), 8*2000)
	}
}

func lines(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}
