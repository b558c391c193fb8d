package proxy_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
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
// and one flush, the same bytes.
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
			if c.writes != 1 || len(c.flushed) != 1 {
				t.Errorf("%d writes and %d flushes, want 1 and 1", c.writes, len(c.flushed))
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
