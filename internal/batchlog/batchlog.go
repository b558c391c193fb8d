// Package batchlog gives a serving command's log lines a writer that
// batches them into few writes, off the request's path, without reordering
// them against anything else the command writes.
package batchlog

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// MaxBuffered is how many bytes a Writer holds before a Write writes them
// itself: past it, a writer that cannot keep up slows its callers down
// rather than growing without bound.
const MaxBuffered = 64 << 10

// Delay is the delay of a serving command's log: long enough that lines
// logged under load share one write, short enough that a person watching
// the log sees them as they happen.
const Delay = 10 * time.Millisecond

// keepCap is the largest buffer kept for the next batch; a larger one, left
// by a burst or one long line, is given back to the collector.
const keepCap = 4 * MaxBuffered

// Writer holds what is written to it and writes it to the underlying writer
// in batches, at most its delay after the first byte of a batch arrived, or
// at once when MaxBuffered bytes are waiting, when Flush is called or when
// something is written through Direct. Bytes reach the underlying writer in
// the order they were written, whichever way. After Close, every write goes
// straight through.
//
// A Writer is safe for concurrent use. What it holds when the process dies
// without Close (a crash, SIGKILL) is lost: at most its delay's worth.
type Writer struct {
	out   io.Writer
	delay time.Duration
	timer *time.Timer

	// wmu orders the writes to out; it is taken before mu.
	wmu    sync.Mutex
	spare  []byte // the previous batch's buffer, for the next one (wmu)
	err    error  // the first error out returned (wmu)
	closed bool   // (wmu and mu to set, either to read)

	mu  sync.Mutex
	buf []byte // waiting to be written (mu)
}

// New returns a Writer that batches writes to out for at most delay.
func New(out io.Writer, delay time.Duration) *Writer {
	w := &Writer{out: out, delay: delay}
	w.timer = time.AfterFunc(time.Hour, func() { _ = w.Flush() })
	w.timer.Stop()
	return w
}

// Write holds a copy of p for the next batch and returns len(p) and no
// error; it writes the batch itself when MaxBuffered bytes are waiting, and
// goes straight through once w is closed, returning out's error.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.direct(p)
	}
	first := len(w.buf) == 0
	w.buf = append(w.buf, p...)
	full := len(w.buf) >= MaxBuffered
	if first && !full {
		w.timer.Reset(w.delay)
	}
	w.mu.Unlock()
	if full {
		_ = w.Flush()
	}
	return len(p), nil
}

// Flush writes what w holds now, and returns the first error out returned
// since w was made.
func (w *Writer) Flush() error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.flushLocked()
	return w.err
}

// flushLocked writes the batch; w.wmu is held.
func (w *Writer) flushLocked() {
	w.mu.Lock()
	b := w.buf
	w.buf = w.spare[:0]
	w.mu.Unlock()
	if len(b) > 0 {
		w.write(b)
	}
	if cap(b) > keepCap {
		b = nil
	}
	w.spare = b
}

// write writes b to out, keeping the first error; w.wmu is held.
func (w *Writer) write(b []byte) (int, error) {
	n, err := w.out.Write(b)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

// direct writes p to out after what w holds.
func (w *Writer) direct(p []byte) (int, error) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.flushLocked()
	return w.write(p)
}

// Direct returns a writer whose writes go to out at once, after what w
// holds: the writer for a command's output that is not a log line (a
// summary, a message on exit, a child process's stderr), so that it comes
// after the log lines written before it.
func (w *Writer) Direct() io.Writer { return directWriter{w} }

type directWriter struct{ w *Writer }

func (d directWriter) Write(p []byte) (int, error) { return d.w.direct(p) }

// Close writes what w holds and makes every later write go straight
// through; it returns the first error out returned. It does not close out.
func (w *Writer) Close() error {
	w.timer.Stop()
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.flushLocked()
	return w.err
}

// Handler returns h, writing to w, made to flush w after each record at or
// above level: such a line (a warning, an error) is out before the caller
// goes on, as it would be without batching, and so is every line before it.
func Handler(h slog.Handler, w *Writer, level slog.Level) slog.Handler {
	return flushAt{h, w, level}
}

type flushAt struct {
	slog.Handler
	w     *Writer
	level slog.Level
}

func (h flushAt) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= h.level {
		if ferr := h.w.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (h flushAt) WithAttrs(as []slog.Attr) slog.Handler {
	return flushAt{h.Handler.WithAttrs(as), h.w, h.level}
}

func (h flushAt) WithGroup(name string) slog.Handler {
	return flushAt{h.Handler.WithGroup(name), h.w, h.level}
}
