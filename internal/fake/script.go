package fake

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"strings"
)

// A Script chooses the response to each request an [Upstream] receives.
// Respond is called from the server's goroutines, possibly concurrently, so a
// Script must not keep unguarded state; the ready scripts keep none.
type Script interface {
	Respond(req *Request) *Response
}

// ScriptFunc adapts a function to a [Script].
type ScriptFunc func(req *Request) *Response

// Respond calls f(req).
func (f ScriptFunc) Respond(req *Request) *Response { return f(req) }

// Request is what a [Script] sees of a request.
type Request struct {
	Recorded
	// N is the position of this request, from 0, among the requests that
	// reached the script of this upstream (requests rejected by RequireHeader,
	// RequireQuery or answered by Status do not count).
	N int
}

// Response is a script's answer.
//
// A response is streamed when Events is non-nil: the status and headers are
// sent at once, then each event is written and flushed in turn, so an event
// must carry its own framing ("data: …\n\n", a JSON line and its "\n", …).
// Otherwise Body is sent with a Content-Length.
//
// Header is served as given except for the hop-by-hop and length/encoding
// headers, which the upstream sets itself, and a missing Date, which is set to
// a fixed day rather than the clock's so that recordings are reproducible.
type Response struct {
	Status int // 0 means 200
	Header http.Header
	Body   []byte
	Events [][]byte
}

// Streamed reports whether r is sent event by event.
func (r *Response) Streamed() bool { return r.Events != nil }

// Bytes returns the whole body: Body, or the events joined.
func (r *Response) Bytes() []byte {
	if !r.Streamed() {
		return r.Body
	}
	return bytes.Join(r.Events, nil)
}

// Verbatim answers every request with status, a copy of h, and body, byte for
// byte. When h's Content-Type is text/event-stream or application/x-ndjson the
// body is served as a stream, one event (one NDJSON line) at a time, and the
// upstream's EventDelay and FailAfterEvents apply to it.
func Verbatim(status int, h http.Header, body []byte) Script {
	resp := verbatim(status, h, body)
	return ScriptFunc(func(*Request) *Response { return resp.clone() })
}

func verbatim(status int, h http.Header, body []byte) *Response {
	resp := &Response{Status: status, Header: h.Clone()}
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "text/event-stream":
		resp.Events = splitSSE(body)
	case "application/x-ndjson":
		resp.Events = splitLines(body)
	default:
		resp.Body = bytes.Clone(body)
	}
	return resp
}

func (r *Response) clone() *Response {
	c := &Response{Status: r.Status, Header: r.Header.Clone(), Body: bytes.Clone(r.Body)}
	if r.Events != nil {
		c.Events = make([][]byte, len(r.Events))
		for i, e := range r.Events {
			c.Events[i] = bytes.Clone(e)
		}
	}
	return c
}

// ServeCaptured answers every request with the captured file name, as it is:
//   - a *.http file gives its own status, headers and body;
//   - a *.sse or *.ndjson file is streamed event by event;
//   - a *.json file is a 200 body, or an error status when its name says so
//     ("openai-error-429-rate-limit.json" is served with 429).
//
// Headers come from the matching captured headers file when there is one
// ("x.response.json" and "x.sse" use "x.response.headers.txt"), else from the
// provider's usual headers. It panics when the file does not exist.
func ServeCaptured(name string) Script {
	body := Captured(name)
	if strings.HasSuffix(name, ".http") {
		status, h, b := CapturedHTTP(name)
		return Verbatim(status, h, b)
	}
	base := name[strings.LastIndex(name, "/")+1:]
	stream := strings.HasSuffix(name, ".sse") || strings.HasSuffix(name, ".ndjson")
	status := http.StatusOK
	if code, _ := errorStatus(base); code != 0 {
		status = code
	}
	p := providerOfName(base)
	h := providerHeader(p, stream)
	if s, ph, ok := pairedHeaders(name); ok {
		status, h = s, servable(ph)
	}
	if strings.HasSuffix(name, ".ndjson") {
		h.Set("Content-Type", "application/x-ndjson")
	}
	return Verbatim(status, h, body)
}

// Sequence answers the n-th request (counted by [Request.N]) with the n-th
// script. Requests beyond the last get a 500 whose body says the sequence is
// exhausted, so a test that sends more requests than it planned for fails
// visibly.
func Sequence(scripts ...Script) Script {
	return ScriptFunc(func(req *Request) *Response {
		if req.N < len(scripts) {
			return scripts[req.N].Respond(req)
		}
		msg := fmt.Sprintf("fake: sequence of %d answers exhausted by request %d (%s %s)",
			len(scripts), req.N+1, req.Method, req.Path)
		return &Response{
			Status: http.StatusInternalServerError,
			Header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}},
			Body:   []byte(msg + "\n"),
		}
	})
}

// splitSSE cuts an SSE body after each blank line (LF LF, CRLF CRLF or CR CR).
// The events joined give back body exactly.
func splitSSE(body []byte) [][]byte {
	events := [][]byte{}
	for len(body) > 0 {
		end := len(body)
		for _, sep := range []string{"\r\n\r\n", "\n\n", "\r\r"} {
			if i := bytes.Index(body, []byte(sep)); i >= 0 && i+len(sep) < end {
				end = i + len(sep)
			}
		}
		events = append(events, bytes.Clone(body[:end]))
		body = body[end:]
	}
	return events
}

// splitLines cuts an NDJSON body after each LF.
func splitLines(body []byte) [][]byte {
	events := [][]byte{}
	for len(body) > 0 {
		end := len(body)
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			end = i + 1
		}
		events = append(events, bytes.Clone(body[:end]))
		body = body[end:]
	}
	return events
}
