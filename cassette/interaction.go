package cassette

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
	"github.com/llmproxy/llmproxy/wire"
)

// DefaultUpstream is the Upstream of an interaction whose request came on a
// path that named no upstream.
const DefaultUpstream = "default"

// ProxyPath is the path a request with this upstream name and
// upstream-relative path is shown as, one form for each route: "/NAME"
// then path, or path alone for DefaultUpstream and for "openai", whose
// unprefixed and /openai/ spellings are one route when the openai upstream
// is the default (as it is unless --upstream URL says otherwise). It is the
// one form every place that shows a path uses: ls, the web view, the log
// lines, the live log and miss messages (an export keeps its two parts,
// "upstream" and "request.path", as the cassette stores them). An empty
// upstream names no route and shows path alone.
func ProxyPath(upstream, path string) string {
	if upstream == DefaultUpstream || upstream == "openai" || upstream == "" {
		return path
	}
	return "/" + upstream + path
}

// Interaction is one recorded request and its complete response.
type Interaction struct {
	// ID is the interaction's ordinal in the cassette, from 1. It is stable:
	// nothing renumbers a cassette except scrub and import, which keep order.
	ID uint64 `json:"id"`
	// Upstream is the routing name the request came through ("openai",
	// "anthropic", "gemini", a --upstream NAME, or DefaultUpstream).
	Upstream string `json:"upstream"`
	// Provider is the provider the API kind belongs to, "" for generic HTTP.
	Provider string `json:"provider,omitempty"`
	// Kind is the API kind (openai-chat, openai-responses,
	// anthropic-messages, gemini, ollama, embeddings, generic).
	Kind       string    `json:"kind"`
	RecordedAt time.Time `json:"recorded_at"`
	Request    Request   `json:"request"`
	Response   Response  `json:"response"`
}

// Request is the recorded request, after redaction.
type Request struct {
	Method string `json:"method"`
	// Path is upstream-relative: the routing prefix is already removed.
	Path string `json:"path"`
	// Query is the raw query string, after redaction.
	Query   string      `json:"query,omitempty"`
	Headers http.Header `json:"headers,omitempty"`
	Body    Body        `json:"body"`
}

// Response is the recorded response. A streamed response keeps each event
// (SSE event or NDJSON line) with the time it arrived, and no Body; the bytes
// served are the events' concatenation.
type Response struct {
	Status  int         `json:"status"`
	Headers http.Header `json:"headers,omitempty"`
	Body    Body        `json:"body,omitempty"`
	// Framing is "sse" or "ndjson" for a streamed response, "" otherwise:
	// the names wire.ParseFraming reads and wire.Framing.String writes.
	Framing string  `json:"framing,omitempty"`
	Events  []Event `json:"events,omitempty"`
	// TTFBMillis is the time from sending the request to the first byte of
	// the response body; DurationMillis to its last.
	TTFBMillis     float64 `json:"ttfb_ms"`
	DurationMillis float64 `json:"duration_ms"`
}

// Event is one frame of a streamed response.
type Event struct {
	// AtMillis is the arrival time of the event's last byte, from the start
	// of the request.
	AtMillis float64 `json:"at_ms"`
	Data     Body    `json:"data"`
}

// Streamed reports whether the response was recorded event by event.
func (r *Response) Streamed() bool { return r.Framing != "" }

// WireFraming is the framing of the response's events, wire.FramingNone for
// a response that is not streamed (or names no framing wire knows).
func (r *Response) WireFraming() wire.Framing {
	f, _ := wire.ParseFraming(r.Framing)
	return f
}

// knownFraming reports whether a stored framing name is one wire knows.
func knownFraming(name string) bool {
	_, ok := wire.ParseFraming(name)
	return ok
}

// Bytes returns the body as served: the body, or the events concatenated.
func (r *Response) Bytes() []byte {
	if !r.Streamed() {
		return r.Body
	}
	n := 0
	for _, e := range r.Events {
		n += len(e.Data)
	}
	b := make([]byte, 0, n)
	for _, e := range r.Events {
		b = append(b, e.Data...)
	}
	return b
}

// Millis converts a duration to the milliseconds stored in a cassette,
// rounded to the microsecond.
func Millis(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

// Body is a byte string that serialises as a JSON string when it is valid
// UTF-8 and as {"base64": "…"} otherwise, so that exports stay readable and
// every byte survives a round trip.
type Body []byte

// MarshalJSON implements json.Marshaler.
func (b Body) MarshalJSON() ([]byte, error) {
	if utf8.Valid(b) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(string(b)); err != nil {
			return nil, err
		}
		return bytes.TrimRight(buf.Bytes(), "\n"), nil
	}
	return json.Marshal(struct {
		Base64 string `json:"base64"`
	}{base64.StdEncoding.EncodeToString(b)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (b *Body) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case bytes.Equal(data, []byte("null")):
		*b = nil
		return nil
	case len(data) > 0 && data[0] == '"':
		if raw, ok := jsonvalue.Unquote(data); ok {
			*b = raw
			return nil
		}
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*b = Body(s)
		return nil
	case len(data) > 0 && data[0] == '{':
		var o struct {
			Base64 *string `json:"base64"`
		}
		if err := json.Unmarshal(data, &o); err != nil {
			return err
		}
		if o.Base64 == nil {
			return fmt.Errorf("body object without \"base64\"")
		}
		raw, err := base64.StdEncoding.DecodeString(*o.Base64)
		if err != nil {
			return fmt.Errorf("body base64: %w", err)
		}
		*b = raw
		return nil
	}
	return fmt.Errorf("body must be a string or {\"base64\": …}, got %.20s", data)
}

// decode reads a stored interaction: a format-2 record (see encode) or a
// format-1 JSON document. The id is the one it is stored under. What it
// returns shares no bytes with v.
func decode(id uint64, v []byte) (*Interaction, error) {
	if len(v) > 0 && v[0] == recordTag {
		i, err := decodeRecord(v)
		if err != nil {
			return nil, fmt.Errorf("interaction %d: %v: %w", id, err, ErrBadRecord)
		}
		i.ID = id
		return i, nil
	}
	i, ok := decodeFast(v, false)
	if !ok {
		i = &Interaction{}
		if err := json.Unmarshal(v, i); err != nil {
			return nil, fmt.Errorf("interaction %d: %w", id, err)
		}
	}
	if !FinalStatus(i.Response.Status) {
		return nil, fmt.Errorf("interaction %d: status %d is not a final HTTP status (200 to 999): %w", id, i.Response.Status, ErrBadRecord)
	}
	return i, nil
}
