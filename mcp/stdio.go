package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// DefaultMaxLine bounds one stdio message when no other bound is given.
const DefaultMaxLine = 32 << 20

// ErrLineTooLong is a stdio message longer than its bound.
var ErrLineTooLong = errors.New("message longer than the limit")

// Lines writes newline-delimited messages to one writer, a whole message
// at a time, from any goroutine.
type Lines struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLines writes messages to w.
func NewLines(w io.Writer) *Lines { return &Lines{w: w} }

// Write writes msg, compacted onto one line if it spans several, and a
// newline.
func (l *Lines) Write(msg []byte) error {
	if bytes.ContainsAny(msg, "\r\n") {
		var b bytes.Buffer
		if err := json.Compact(&b, msg); err == nil {
			msg = b.Bytes()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.w.Write(msg); err != nil {
		return err
	}
	_, err := l.w.Write([]byte{'\n'})
	return err
}

// readLine reads one line of at most max bytes, without its newline; an
// over-long line is ErrLineTooLong, after which r is not usable.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max+1 {
			return nil, fmt.Errorf("%w of %d bytes", ErrLineTooLong, max)
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return bytes.TrimRight(line, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(line) > 0:
			return bytes.TrimRight(line, "\r\n"), nil
		default:
			return nil, err
		}
	}
}

// Bridge carries the stdio of an MCP client to an HTTP handler, as the
// streamable HTTP transport would: each message the client writes is
// POSTed to Path, and the answer's message (a JSON body, or each SSE
// event's data) is written back as a line. Requests are sent concurrently,
// each as it arrives; notifications and responses one after the other.
type Bridge struct {
	Handler http.Handler
	Path    string // the route, e.g. "/mcp/NAME"
	MaxLine int    // bounds one message; 0 means DefaultMaxLine
}

// Serve reads messages from in until it ends or ctx is done, and writes
// the answers to out; it returns once every request it sent was answered.
// A line that is not one JSON-RPC message gets a JSON-RPC error (id null)
// and the bridge goes on; a line over MaxLine ends it with an error.
func (b *Bridge) Serve(ctx context.Context, in io.Reader, out *Lines) error {
	max := b.MaxLine
	if max <= 0 {
		max = DefaultMaxLine
	}
	lines := make(chan []byte)
	failed := make(chan error, 1)
	go func() { // a read blocks; ctx does not wait for it
		defer close(lines)
		r := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := readLine(r, max)
			if err != nil {
				if err != io.EOF {
					failed <- fmt.Errorf("stdin: %w", err)
				}
				return
			}
			select {
			case lines <- line:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		var line []byte
		var ok bool
		select {
		case <-ctx.Done():
			return ctx.Err()
		case line, ok = <-lines:
		}
		if !ok {
			select {
			case err := <-failed:
				_ = out.Write(ErrorBody(nil, CodeInvalidRequest, "llmproxy: "+err.Error(), nil))
				return err
			default:
				return nil
			}
		}
		b.take(ctx, line, out, &wg)
	}
}

// take answers one line: a request in a goroutine of its own, anything
// else at once.
func (b *Bridge) take(ctx context.Context, line []byte, out *Lines, wg *sync.WaitGroup) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	m, err := Parse(line)
	if err != nil {
		code := CodeInvalidRequest
		if errors.Is(err, ErrMalformed) {
			code = CodeParseError
		}
		_ = out.Write(ErrorBody(nil, code, "llmproxy: stdin: the message is "+err.Error(), nil))
		return
	}
	if m.Notification() {
		b.send(ctx, line, m, out)
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		b.send(ctx, line, m, out)
	}()
}

// send POSTs one message to the handler and writes its answer.
func (b *Bridge) send(ctx context.Context, line []byte, m Message, out *Lines) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1"+b.Path, bytes.NewReader(line))
	if err != nil {
		_ = out.Write(ErrorBody(m.ID, CodeInternalError, "llmproxy: "+err.Error(), nil))
		return
	}
	req.RemoteAddr = "127.0.0.1:0"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	w := &answer{header: http.Header{}}
	b.Handler.ServeHTTP(w, req)
	msgs := w.messages()
	for _, msg := range msgs {
		if !m.Notification() {
			msg = withID(msg, m.ID)
		}
		_ = out.Write(msg)
	}
	if w.status >= 300 && len(msgs) == 0 && !m.Notification() {
		_ = out.Write(ErrorBody(m.ID, CodeInternalError, fmt.Sprintf("llmproxy: HTTP %d: %s", w.status, bytes.TrimSpace(w.body.Bytes())), nil))
	}
}

// withID gives an error answer whose id is null (the proxy could not read
// the request's) the request's id.
func withID(msg, id []byte) []byte {
	if r := gjson.GetBytes(msg, "id"); r.Type == gjson.Null && r.Exists() {
		if out, err := sjson.SetRawBytes(msg, "id", id); err == nil {
			return out
		}
	}
	return msg
}

// answer is an http.ResponseWriter that keeps the answer in memory.
type answer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (a *answer) Header() http.Header { return a.header }
func (a *answer) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
}
func (a *answer) Write(p []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return a.body.Write(p)
}
func (a *answer) Flush() {}

// messages are the JSON-RPC messages of the answer: each SSE event's data,
// or the body if it is JSON.
func (a *answer) messages() [][]byte {
	body := a.body.Bytes()
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	ct := a.header.Get("Content-Type")
	if !bytes.HasPrefix([]byte(ct), []byte("text/event-stream")) {
		if gjson.ValidBytes(body) && gjson.GetBytes(body, "jsonrpc").Exists() {
			return [][]byte{body}
		}
		return nil
	}
	var out [][]byte
	var data []byte
	for _, line := range bytes.Split(body, []byte("\n")) {
		line = bytes.TrimRight(line, "\r")
		if len(line) == 0 {
			if len(data) > 0 {
				out = append(out, data)
			}
			data = nil
			continue
		}
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
		}
	}
	if len(data) > 0 {
		out = append(out, data)
	}
	return out
}

// idKey is a JSON-RPC id as a map key: numbers and strings never collide.
func idKey(id []byte) string {
	r := gjson.ParseBytes(id)
	if r.Type == gjson.String {
		return "s" + r.Str
	}
	return "n" + strconv.FormatFloat(r.Num, 'g', -1, 64)
}
