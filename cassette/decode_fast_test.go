package cassette

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fastCorpus are interactions of every shape encode writes.
func fastCorpus() []*Interaction {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600700800, time.FixedZone("X", 3600))
	sse := []Event{
		{AtMillis: 0.5, Data: Body("event: message_start\ndata: {\"type\":\"message_start\"}\n\n")},
		{AtMillis: 12.25, Data: Body("data: {\"content\":\"héllo ✓ 😀 \\u2028\"}\r\n\r\n")},
		{AtMillis: 1e-3, Data: Body("")},
	}
	return []*Interaction{
		{Response: Response{Status: 200}}, // the least a record may hold
		{ID: 1, Upstream: "openai", Provider: "openai", Kind: "openai-chat", RecordedAt: at,
			Request: Request{Method: "POST", Path: "/v1/chat/completions", Query: "a=1&b=%20",
				Headers: http.Header{"Content-Type": {"application/json"}, "Authorization": {"REDACTED"}, "X-Multi": {"a", "b", ""}},
				Body:    Body(`{"messages":[{"role":"user","content":"say \"hi\"\n\ttab"}]}`)},
			Response: Response{Status: 200, Headers: http.Header{"Content-Type": {"application/json"}, "Empty": {}},
				Body: Body(`{"id":"x","choices":[]}`), TTFBMillis: 480.125, DurationMillis: 574}},
		{ID: 2, Upstream: "anthropic", Kind: "anthropic-messages", RecordedAt: at.UTC(),
			Request:  Request{Method: "POST", Path: "/v1/messages", Body: Body("{}")},
			Response: Response{Status: 200, Framing: "sse", Events: sse, TTFBMillis: 1, DurationMillis: 2}},
		{ID: 3, Kind: "generic", Request: Request{Method: "GET", Path: "/bin", Body: Body{0xff, 0xfe, 0x00}},
			Response: Response{Status: 200, Body: Body{0x89, 'P', 'N', 'G', 0x00, 0xff}}},
		{ID: 4, Kind: "generic", Request: Request{Method: "GET", Path: "/ctl", Body: Body("\x00\x01\x1f\x7f<&>")},
			Response: Response{Status: 204, Framing: "ndjson", Events: []Event{}}},
		{ID: 18446744073709551615, Response: Response{Status: 999, TTFBMillis: -0.0, DurationMillis: 1e300}},
	}
}

func slowDecode(t *testing.T, v []byte) (*Interaction, error) {
	t.Helper()
	var i Interaction
	err := json.Unmarshal(v, &i)
	return &i, err
}

// On every document it accepts, decodeFast gives what encoding/json gives,
// nil and empty alike; and it accepts what encode writes, but for a
// base64 body.
func TestDecodeFastMatchesEncodingJSON(t *testing.T) {
	for n, in := range fastCorpus() {
		v, err := encodeV1(in)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := decodeFast(v, false)
		base64 := strings.Contains(string(v), `"base64"`)
		if !ok {
			if !base64 {
				t.Errorf("interaction %d: decodeFast refused what encode wrote: %s", n, v)
			}
			continue
		}
		want, err := slowDecode(t, v)
		if err != nil {
			t.Fatalf("interaction %d: encoding/json: %v", n, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("interaction %d:\nfast %#v\njson %#v", n, got, want)
		}
	}
}

// Skipping the request body gives the same interaction without it, and
// the Reply of a format-1 record is that of the same interaction in
// format 2 (a base64 body takes the slow path).
func TestDecodeFastSkipsRequestBody(t *testing.T) {
	for n, in := range fastCorpus() {
		v, err := encodeV1(in)
		if err != nil {
			t.Fatal(err)
		}
		want, err := slowDecode(t, v)
		if err != nil {
			t.Fatal(err)
		}
		want.Request.Body = nil
		if got, ok := decodeFast(v, true); ok && !reflect.DeepEqual(got, want) {
			t.Errorf("interaction %d skipping the request body:\nfast %#v\njson %#v", n, got, want)
		}
		v2, err := encode(in)
		if err != nil {
			t.Fatal(err)
		}
		got1, err := replyOf(v)
		if err != nil {
			t.Fatalf("interaction %d: Reply of format 1: %v", n, err)
		}
		got2, err := replyOf(v2)
		if err != nil {
			t.Fatalf("interaction %d: Reply of format 2: %v", n, err)
		}
		if a, b := describeReply(&got1), describeReply(&got2); a != b {
			t.Errorf("interaction %d: Reply of format 1\n%s\nof format 2\n%s", n, a, b)
		}
	}
}

func TestDecodeFastLeavesTheRestToEncodingJSON(t *testing.T) {
	for _, doc := range []string{
		`{"id":1,"id":2}`,                        // repeated field
		`{"ID":1}`,                               // encoding/json folds case
		`{"id":1,"extra":true}`,                  // unknown field
		`{"id":null}`,                            // null
		`{"request":{"body":{"base64":"AAE="}}}`, // base64 body
		`{"id":1.5}`, `{"id":-1}`, `{"id":01}`,   // not a uint64
		`{"response":{"ttfb_ms":+1}}`,                 // not JSON
		`{"response":{"ttfb_ms":0x10}}`,               // not JSON
		`{"upstream":"a\u00"}`, "{\"kind\":\"\x01\"}", // bad strings
		`{"id":1}x`, `{"id":1`, `{"id":1,}`, `[]`, ``, // bad documents
		`{"recorded_at":"yesterday"}`,
	} {
		if i, ok := decodeFast([]byte(doc), false); ok {
			t.Errorf("decodeFast(%s) = %+v, want it left to encoding/json", doc, i)
		}
	}
}

// decodeFast knows every field of the stored form. A field it does not
// know sends every document that holds it to the slow path: add it there.
func TestDecodeFastKnowsEveryField(t *testing.T) {
	known := map[string][]string{
		"Interaction": {"id", "upstream", "provider", "kind", "recorded_at", "request", "response"},
		"Request":     {"method", "path", "query", "headers", "body"},
		"Response":    {"status", "headers", "body", "framing", "events", "ttfb_ms", "duration_ms"},
		"Event":       {"at_ms", "data"},
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[Interaction](), reflect.TypeFor[Request](), reflect.TypeFor[Response](), reflect.TypeFor[Event]()} {
		var tags []string
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "-" {
				tags = append(tags, name)
			}
		}
		if !reflect.DeepEqual(tags, known[typ.Name()]) {
			t.Errorf("%s has JSON fields %v; decodeFast (decode_fast.go) knows %v", typ.Name(), tags, known[typ.Name()])
		}
	}
}

func FuzzDecodeFast(f *testing.F) {
	for _, in := range fastCorpus() {
		v, _ := encodeV1(in)
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		got, ok := decodeFast(v, false)
		if !ok {
			return
		}
		want, err := slowDecode(t, v)
		if err != nil {
			t.Fatalf("decodeFast accepted %q, encoding/json fails: %v", v, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nfast %#v\njson %#v", v, got, want)
		}
	})
}
