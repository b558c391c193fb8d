package wire

import (
	"bytes"
	"fmt"
	"mime"
	"strings"
)

// Framing is how a response body is cut into events.
type Framing uint8

const (
	// FramingNone is a body that is one document (or a streamed JSON array,
	// as Gemini's streamGenerateContent sends without alt=sse).
	FramingNone Framing = iota
	// FramingSSE is Server-Sent Events (text/event-stream).
	FramingSSE
	// FramingNDJSON is one JSON document per line (Ollama's streams).
	FramingNDJSON
	// FramingEventStream is AWS event stream messages
	// (application/vnd.amazon.eventstream; see DecodeEventStream): Bedrock's
	// streams.
	FramingEventStream
)

// String returns "none", "sse", "ndjson" or "eventstream".
func (f Framing) String() string {
	switch f {
	case FramingSSE:
		return "sse"
	case FramingNDJSON:
		return "ndjson"
	case FramingEventStream:
		return "eventstream"
	}
	return "none"
}

// ParseFraming returns the framing a cassette names: "sse" and "ndjson" as
// String writes them, and "" for a response that is not streamed
// (FramingNone). ok is false for any other name, "none" included, which a
// cassette never stores.
func ParseFraming(name string) (f Framing, ok bool) {
	switch name {
	case "":
		return FramingNone, true
	case "sse":
		return FramingSSE, true
	case "ndjson":
		return FramingNDJSON, true
	case "eventstream":
		return FramingEventStream, true
	}
	return FramingNone, false
}

// DetectFraming returns the framing announced by a Content-Type header value:
// text/event-stream is FramingSSE; application/x-ndjson, application/ndjson
// and application/jsonl are FramingNDJSON;
// application/vnd.amazon.eventstream is FramingEventStream; anything else, including an empty
// or unparsable value, is FramingNone.
func DetectFraming(contentType string) Framing {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt, _, _ = strings.Cut(contentType, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	switch mt {
	case "text/event-stream":
		return FramingSSE
	case "application/x-ndjson", "application/ndjson", "application/jsonl":
		return FramingNDJSON
	case "application/vnd.amazon.eventstream":
		return FramingEventStream
	}
	return FramingNone
}

// Event is one event of a streamed body: an SSE event, an NDJSON line or
// an event stream message.
//
// For SSE an event is every line up to and including the blank line that ends
// it. Blocks with no data field (comments, keep-alives, a stray blank line)
// are events too, with nil Data, so that nothing is ever lost: concatenating
// the Raw of all events of a body reproduces the body exactly.
type Event struct {
	// Raw is the event's exact bytes, terminator included.
	Raw []byte
	// Name is the SSE "event:" field ("" if absent, and always for NDJSON);
	// for an event stream message, its ":event-type" header, or for an
	// exception its ":exception-type".
	Name string
	// Data is, for SSE, the values of the event's "data:" lines joined by
	// "\n" (nil when it has none); for NDJSON, the line without its "\n" or
	// "\r\n"; for an event stream message, its payload; for FramingNone,
	// the whole body.
	Data []byte
}

// Splitter cuts a body into events as it arrives. It accepts any chunking:
// an event split across several Push calls, or several events in one, gives
// the same events as Split on the whole body. A Splitter is not safe for
// concurrent use.
//
// SSE lines may end in LF, CRLF or CR. A CR that ends a chunk is held back
// until the next byte shows whether an LF follows, so that a CRLF split
// across two reads is still one line ending.
type Splitter struct {
	f   Framing
	buf []byte // bytes not yet returned in an event
	// store is buf's whole backing array: the bytes before buf are events
	// already returned, room to move buf back to rather than grow it.
	store  []byte
	names  map[string]string // SSE event names seen, so each is allocated once
	line   int               // offset in buf of the first byte of the line being read
	look   int               // offset in buf from which to look for the next line end
	events int               // events returned so far
	err    error             // why an event stream stopped splitting (Err)
}

// Err is why the Splitter returns no more events although bytes remain:
// for FramingEventStream, the first message that is not a valid one (a
// length out of bounds, a CRC that does not match, a header that does not
// parse), wrapping ErrEventStream; nil otherwise. Every byte from that
// message on is left in Rest.
func (s *Splitter) Err() error { return s.err }

// NewSplitter returns a Splitter for the given framing. With FramingNone it
// returns no event until End, which returns the whole body as one.
func NewSplitter(f Framing) *Splitter {
	return &Splitter{f: f}
}

// Push adds the next bytes of the body and returns the events they complete,
// in order. The returned events never share memory with p or with the
// Splitter, so p may be reused at once.
func (s *Splitter) Push(p []byte) []Event {
	need := len(s.buf) + len(p)
	if need > cap(s.buf) && need <= cap(s.store) {
		s.buf = s.store[:copy(s.store[:cap(s.store)], s.buf)]
	}
	before := cap(s.buf)
	s.buf = append(s.buf, p...)
	if cap(s.buf) != before {
		s.store = s.buf[:0] // append moved buf to a new array
	}
	return s.drain(false)
}

// Rest returns (a copy of) the bytes pushed so far that do not yet form a
// complete event: after the last Push of a truncated stream, its tail.
func (s *Splitter) Rest() []byte {
	return bytes.Clone(s.buf)
}

// End marks the end of the body. It returns the events that only the end
// completes (an SSE event ended by a final CR) and then, if bytes remain, a
// last event holding them so that every byte pushed is in some Raw. End
// resets the Splitter for a new body.
func (s *Splitter) End() []Event {
	evs, _ := s.Finish()
	if len(s.buf) > 0 {
		evs = append(evs, s.event(len(s.buf), len(s.buf)))
	}
	*s = Splitter{f: s.f}
	return evs
}

// Finish marks the end of the body without resetting the Splitter: it
// returns the events that only the end completes (an SSE event whose lines
// end in CR, ended by the body's last byte) and a copy of the bytes left
// after them, which form no complete event (a truncated stream's tail, or
// an NDJSON last line without its LF). Concatenating the Raw of every event
// returned by Push and Finish, then rest, gives the body.
func (s *Splitter) Finish() (evs []Event, rest []byte) {
	evs = s.drain(true)
	return evs, bytes.Clone(s.buf)
}

// Split cuts a whole body into events. A trailing incomplete event is returned
// as the last Event, so the Raw of the events always concatenate to body.
func Split(f Framing, body []byte) []Event {
	s := NewSplitter(f)
	evs := s.Push(body)
	return append(evs, s.End()...)
}

// drain returns the complete events at the front of s.buf and drops their
// bytes. atEOF says no more bytes will come, which settles a final CR.
func (s *Splitter) drain(atEOF bool) []Event {
	if s.f == FramingEventStream {
		return s.drainEventStream()
	}
	if s.f != FramingSSE && s.f != FramingNDJSON {
		return nil
	}
	var evs []Event
	for {
		end, next, ok := nextLineEnd(s.f, s.buf, s.look, atEOF)
		if !ok {
			s.look = end
			return evs
		}
		empty := end == s.line
		s.line, s.look = next, next
		if s.f == FramingNDJSON || empty {
			// An NDJSON line is an event; an empty SSE line ends one.
			evs = append(evs, s.event(next, end))
			s.buf = s.buf[next:]
			s.line, s.look = 0, 0
		}
	}
}

// event builds the event held in s.buf[:n]; dataEnd is where an NDJSON
// line's content ends.
func (s *Splitter) event(n, dataEnd int) Event {
	ev := Event{Raw: bytes.Clone(s.buf[:n])}
	switch s.f {
	case FramingSSE:
		var name []byte
		name, ev.Data, _ = parseSSE(ev.Raw, s.events == 0, false)
		ev.Name = s.name(name)
	case FramingNDJSON:
		ev.Data = ev.Raw[:dataEnd:dataEnd]
	default:
		ev.Data = ev.Raw
	}
	s.events++
	return ev
}

// drainEventStream returns the complete, valid messages at the front of
// s.buf and drops their bytes. At the first invalid message it sets s.err
// and returns no more.
func (s *Splitter) drainEventStream() []Event {
	var evs []Event
	for s.err == nil {
		n, err := eventStreamLength(s.buf)
		if err != nil || n == 0 || n > len(s.buf) {
			s.err = eventStreamErr(s.events, err)
			return evs
		}
		raw := bytes.Clone(s.buf[:n])
		m, err := DecodeEventStream(raw)
		if err != nil {
			s.err = eventStreamErr(s.events, err)
			return evs
		}
		name := m.Header(":event-type")
		if m.Header(":message-type") == "exception" {
			name = m.Header(":exception-type")
		}
		evs = append(evs, Event{Raw: raw, Name: s.name([]byte(name)), Data: m.Payload})
		s.events++
		s.buf = s.buf[n:]
	}
	return evs
}

func eventStreamErr(n int, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("event stream message %d: %w", n, err)
}

// name returns an SSE event name as a string, the same string each time
// a stream repeats it (most streams use a handful of names).
func (s *Splitter) name(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if n, ok := s.names[string(b)]; ok {
		return n
	}
	n := string(b)
	if len(s.names) < 64 {
		if s.names == nil {
			s.names = map[string]string{}
		}
		s.names[n] = n
	}
	return n
}

// nextLineEnd finds the end of the line that the byte at from belongs to
// (from is at or after that line's start). It returns the offset of the
// terminator and of the byte after it. ok is false when b holds no complete
// line yet; end is then the offset to resume looking from.
//
// SSE lines end in LF, CRLF or CR; NDJSON lines end in LF, and a CR before
// that LF is part of the terminator. A CR at the very end of b ends a line
// only atEOF, since an LF may follow in the next chunk.
func nextLineEnd(f Framing, b []byte, from int, atEOF bool) (end, next int, ok bool) {
	if f == FramingNDJSON {
		i := bytes.IndexByte(b[from:], '\n')
		if i < 0 {
			return len(b), 0, false
		}
		end = from + i
		next = end + 1
		if end > 0 && b[end-1] == '\r' {
			end--
		}
		return end, next, true
	}
	i := bytes.IndexAny(b[from:], "\r\n")
	if i < 0 {
		return len(b), 0, false
	}
	end = from + i
	if b[end] == '\n' {
		return end, end + 1, true
	}
	switch {
	case end+1 < len(b) && b[end+1] == '\n':
		return end, end + 2, true
	case end+1 < len(b) || atEOF:
		return end, end + 1, true
	}
	return end, 0, false
}

// span is a byte range [start, end).
type span struct{ start, end int }

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// parseSSE reads the fields of one SSE event's raw bytes (complete, or a
// stream's unterminated tail). first says whether it is the stream's first
// event, where a UTF-8 byte order mark is ignored. It returns the event name
// (a slice of raw), the joined data, and, when withSpans is set, where each
// data line's value lies in raw.
func parseSSE(raw []byte, first, withSpans bool) (name, data []byte, spans []span) {
	pos := 0
	if first && bytes.HasPrefix(raw, utf8BOM) {
		pos = len(utf8BOM)
	}
	for pos < len(raw) {
		end, next, ok := nextLineEnd(FramingSSE, raw, pos, true)
		if !ok {
			end, next = len(raw), len(raw)
		}
		line := raw[pos:end]
		start := pos
		pos = next
		if len(line) == 0 || line[0] == ':' {
			continue
		}
		field, value := line, line[len(line):]
		if c := bytes.IndexByte(line, ':'); c >= 0 {
			field, value = line[:c], line[c+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "event":
			name = value
		case "data":
			if data == nil {
				// One data line, the usual case, is a slice of raw, capped
				// at its length so that a second line's append copies it
				// out instead of writing into raw.
				data = value[:len(value):len(value)]
			} else {
				data = append(append(data, '\n'), value...)
			}
			if withSpans {
				vs := start + (len(line) - len(value))
				spans = append(spans, span{vs, vs + len(value)})
			}
		}
	}
	return name, data, spans
}
