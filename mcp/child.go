package mcp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// ErrServerGone is a request to a stdio server that exited or broke.
var ErrServerGone = errors.New("the MCP server is not running")

// Child runs a stdio MCP server and is the http.RoundTripper through which
// the proxy forwards MCP requests to it: a request's body is written to
// the server's stdin as one line, and the server's response with the same
// id comes back as a 200 application/json answer; a notification (or a
// response to the server) is written and answered 202 at once. What the
// server sends unasked (its own requests and notifications) goes to
// Unsolicited. A server that writes a line that is no JSON-RPC message, or
// one over its bound, is killed; it and a server that exits fail every
// request waiting for it and every later one with an error wrapping
// ErrServerGone that says why.
type Child struct {
	name        string
	cmd         *exec.Cmd
	stdin       io.WriteCloser
	unsolicited func([]byte)
	writeMu     sync.Mutex

	mu      sync.Mutex
	pending map[string]chan []byte
	err     error // why the server is gone; nil while it runs
	closing bool  // Close was called: an exit is no failure
	failed  error // why the server broke or exited before Close; nil if it did not
	done    chan struct{}
}

// StartChild starts cmd (whose Stdin and Stdout must be unset) as a stdio
// MCP server; maxLine bounds one message it writes (0: DefaultMaxLine).
func StartChild(cmd *exec.Cmd, maxLine int, unsolicited func([]byte)) (*Child, error) {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	c := &Child{name: strings.Join(cmd.Args, " "), cmd: cmd, unsolicited: unsolicited, pending: map[string]chan []byte{}, done: make(chan struct{})}
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting MCP server %s: %w", c.name, err)
	}
	go c.read(stdout, maxLine)
	return c, nil
}

// Done is closed once the server is gone; Err then says why.
func (c *Child) Done() <-chan struct{} { return c.done }

// Err is why the server is gone, nil while it runs.
func (c *Child) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// read takes the server's messages until its stdout ends or breaks, then
// waits for it to exit.
func (c *Child) read(stdout io.Reader, maxLine int) {
	r := bufio.NewReaderSize(stdout, 64<<10)
	var why error
	for {
		line, err := readLine(r, maxLine)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				why = fmt.Errorf("MCP server %s: stdout: %w", c.name, err)
			}
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		m, err := Parse(line)
		if err != nil {
			why = fmt.Errorf("MCP server %s wrote a line that is %v: %q", c.name, err, shorten(line))
			break
		}
		if m.Method == "" && m.ID != nil {
			c.deliver(m.ID, line)
		} else if c.unsolicited != nil {
			c.unsolicited(line)
		}
	}
	broke := why != nil
	if broke && c.cmd.Process != nil {
		_ = c.cmd.Process.Kill()
	}
	_, _ = io.Copy(io.Discard, stdout)
	werr := c.cmd.Wait()
	if why == nil {
		why = fmt.Errorf("MCP server %s exited (%v)", c.name, exitOf(werr))
	}
	c.mu.Lock()
	c.err = fmt.Errorf("%w: %w", ErrServerGone, why)
	if broke || !c.closing {
		c.failed = c.err
	}
	c.mu.Unlock()
	close(c.done)
}

func exitOf(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}

func shorten(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// deliver hands a response to the request waiting for it; one no request
// waits for (a late answer to a cancelled request) is dropped.
func (c *Child) deliver(id, line []byte) {
	c.mu.Lock()
	ch, ok := c.pending[idKey(id)]
	delete(c.pending, idKey(id))
	c.mu.Unlock()
	if ok {
		ch <- bytes.Clone(line)
	}
}

// write sends one message to the server's stdin.
func (c *Child) write(line []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if _, err := c.stdin.Write(append(bytes.TrimRight(line, "\r\n"), '\n')); err != nil {
		if gone := c.Err(); gone != nil {
			return gone
		}
		return fmt.Errorf("MCP server %s: stdin: %w", c.name, err)
	}
	return nil
}

// RoundTrip sends one MCP message to the server (see Child).
func (c *Child) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	if gone := c.Err(); gone != nil {
		return nil, gone
	}
	m, err := Parse(body)
	if err != nil {
		return nil, fmt.Errorf("MCP request: %w", err)
	}
	if m.Notification() {
		if err := c.write(body); err != nil {
			return nil, err
		}
		return reply(req, http.StatusAccepted, nil), nil
	}
	ch := make(chan []byte, 1)
	key := idKey(m.ID)
	c.mu.Lock()
	if _, dup := c.pending[key]; dup {
		c.mu.Unlock()
		return nil, fmt.Errorf("MCP request id %s is already waiting for an answer", m.ID)
	}
	c.pending[key] = ch
	c.mu.Unlock()
	drop := func() {
		c.mu.Lock()
		delete(c.pending, key)
		c.mu.Unlock()
	}
	if err := c.write(body); err != nil {
		drop()
		return nil, err
	}
	select {
	case line := <-ch:
		return reply(req, http.StatusOK, line), nil
	case <-req.Context().Done():
		drop()
		return nil, req.Context().Err()
	case <-c.done:
		drop()
		select {
		case line := <-ch: // answered just before it went
			return reply(req, http.StatusOK, line), nil
		default:
			return nil, c.Err()
		}
	}
}

func reply(req *http.Request, status int, body []byte) *http.Response {
	h := http.Header{}
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	return &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, Request: req,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
	}
}

// Failure is why the server broke (wrote what is no JSON-RPC message, or
// one over its bound) or exited before Close; nil if it did neither.
func (c *Child) Failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed
}

// Close ends the server: its stdin is closed, and it is killed if it has
// not exited within grace.
func (c *Child) Close(grace time.Duration) error {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	_ = c.stdin.Close()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	return nil
}
