package proxy_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmproxy/llmproxy/proxy"
	"github.com/llmproxy/llmproxy/scenario"
)

// flushCounter is a ResponseWriter that counts the handler's Write and
// Flush calls and keeps, at each flush, the bytes written since the one
// before.
type flushCounter struct {
	*httptest.ResponseRecorder
	writes  int
	flushed [][]byte // what each flush sent
	pending []byte
}

func (c *flushCounter) Write(b []byte) (int, error) {
	c.writes++
	c.pending = append(c.pending, b...)
	return c.ResponseRecorder.Write(b)
}

func (c *flushCounter) Flush() {
	c.flushed = append(c.flushed, c.pending)
	c.pending = nil
	c.ResponseRecorder.Flush()
}

// streamScenario answers any request with a text of six words streamed in
// chunks of one word, with the stream options opts (", interval: 1ms").
func streamScenario(opts string) string {
	return `version: 1
name: words
steps:
  - id: words
    respond: {text: "one two three four five six", stream: {chunk: 4` + opts + `}}
`
}

// serveStream has a fresh mock server answer one streamed chat request
// into a flushCounter; it reports whether the handler aborted the
// connection (http.ErrAbortHandler).
func serveStream(t *testing.T, text string, pace proxy.Pace) (c *flushCounter, aborted bool) {
	t.Helper()
	s, err := scenario.Parse("words.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	e, err := scenario.NewEngine(s)
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(proxy.Config{Mode: proxy.ModeMock, Pace: pace, Scenarios: map[string]*scenario.Engine{"words": e}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	r.Header.Set("Content-Type", "application/json")
	c = &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	defer func() {
		if v := recover(); v != nil {
			if err, ok := v.(error); !ok || !errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			aborted = true
		}
	}()
	p.ServeHTTP(c, r)
	return c, false
}

// sseEvents splits an SSE body after each blank line.
func sseEvents(body []byte) [][]byte {
	var out [][]byte
	for ev := range bytes.SplitAfterSeq(body, []byte("\n\n")) {
		if len(ev) > 0 {
			out = append(out, ev)
		}
	}
	return out
}

// A stream paced by an interval goes out event by event, one write and one
// flush each; an unpaced one (no interval, or --pace instant) in one write
// and no flush of its own, the same bytes.
func TestMockStreamWrites(t *testing.T) {
	paced, _ := serveStream(t, streamScenario(", interval: 1ms"), proxy.PaceScripted)
	want := paced.Body.Bytes()
	events := sseEvents(want)
	if len(events) < 4 || !bytes.HasSuffix(want, []byte("data: [DONE]\n\n")) {
		t.Fatalf("paced stream of %d events:\n%s", len(events), want)
	}
	if paced.writes != len(events) || len(paced.flushed) != len(events) {
		t.Errorf("paced: %d writes and %d flushes for %d events, want one each", paced.writes, len(paced.flushed), len(events))
	}
	for i, f := range paced.flushed {
		if i < len(events) && !bytes.Equal(f, events[i]) {
			t.Errorf("paced: flush %d sent %q, want event %d, %q", i+1, f, i+1, events[i])
		}
	}
	for _, tc := range []struct {
		name string
		opts string
		pace proxy.Pace
	}{
		{"scripted pace, no interval", "", proxy.PaceScripted},
		{"scripted pace, interval 0", ", interval: 0s", proxy.PaceScripted},
		{"instant pace, an interval", ", interval: 1h", proxy.PaceInstant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := serveStream(t, streamScenario(tc.opts), tc.pace)
			if got := c.Body.Bytes(); !bytes.Equal(got, want) {
				t.Errorf("body differs from the paced stream's:\n%s\nwant:\n%s", got, want)
			}
			if c.writes != 1 || len(c.flushed) != 0 {
				t.Errorf("%d writes and %d flushes, want 1 and 0 (net/http sends the bytes with the body's end)", c.writes, len(c.flushed))
			}
		})
	}
}

// A cut stream, paced or not, sends exactly its first cut-after events,
// then aborts the connection.
func TestMockStreamCutWrites(t *testing.T) {
	whole, _ := serveStream(t, streamScenario(""), proxy.PaceScripted)
	events := sseEvents(whole.Body.Bytes())
	want := bytes.Join(events[:2], nil)
	for _, tc := range []struct {
		name           string
		opts           string
		writes, flushs int
	}{
		{"unpaced", "", 1, 1},
		{"paced", ", interval: 1ms", 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(streamScenario(tc.opts), "}}\n", "}, cut-after: 2}\n", 1)
			c, aborted := serveStream(t, text, proxy.PaceScripted)
			if !aborted {
				t.Error("the cut stream did not abort its connection")
			}
			if got := c.Body.Bytes(); !bytes.Equal(got, want) {
				t.Errorf("sent %q, want the first 2 events %q", got, want)
			}
			if c.writes != tc.writes || len(c.flushed) != tc.flushs {
				t.Errorf("%d writes and %d flushes, want %d and %d", c.writes, len(c.flushed), tc.writes, tc.flushs)
			}
		})
	}
}

// connWrites counts the writes to the connections a listener accepted.
type connWrites struct {
	net.Listener
	n atomic.Int64
}

func (l *connWrites) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: c, n: &l.n}, nil
}

type countedConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countedConn) Write(b []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(b)
}

// An unpaced answer that fits net/http's buffers leaves in one write to
// the connection, a stream's chunked end included: a client at one
// connection waits for one segment, not two. A paced stream writes each
// event, then the end.
func TestMockAnswerConnWrites(t *testing.T) {
	for _, tc := range []struct {
		name, opts string
		stream     bool
		want       func(events int) int64
	}{
		{"JSON", "", false, func(int) int64 { return 1 }},
		{"stream, unpaced", "", true, func(int) int64 { return 1 }},
		{"stream, paced", ", interval: 1ms", true, func(events int) int64 { return int64(events) + 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scenario.Parse("words.yaml", []byte(streamScenario(tc.opts)))
			if err != nil {
				t.Fatal(err)
			}
			e, err := scenario.NewEngine(s)
			if err != nil {
				t.Fatal(err)
			}
			p, err := proxy.New(proxy.Config{Mode: proxy.ModeMock, Pace: proxy.PaceScripted, Scenarios: map[string]*scenario.Engine{"words": e}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			srv := httptest.NewUnstartedServer(p)
			l := &connWrites{Listener: srv.Listener}
			srv.Listener = l
			srv.Start()
			t.Cleanup(srv.Close)
			body := fmt.Sprintf(`{"model":"gpt-4o-mini","stream":%t,"messages":[{"role":"user","content":"hi"}]}`, tc.stream)
			resp, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, %v: %s", resp.StatusCode, err, got)
			}
			events := len(sseEvents(got))
			if n, want := l.n.Load(), tc.want(events); n != want {
				t.Errorf("%d writes to the connection for an answer of %d bytes (%d events), want %d", n, len(got), events, want)
			}
		})
	}
}
