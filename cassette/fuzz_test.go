package cassette_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/store"
)

// seedExport is an export with every kind of field: a streamed and a plain
// interaction, a body that is not UTF-8, headers, a query, fixtures.
func seedExport(f *testing.F) []byte {
	f.Helper()
	plain := sample(1)
	plain.Response = cassette.Response{Status: 429, Headers: http.Header{"Retry-After": {"2"}},
		Body: cassette.Body(`{"error":{"message":"slow down"}}`), TTFBMillis: 1.5, DurationMillis: 2}
	plain.Request.Query = "alt=sse&key=REDACTED"
	binary := sample(3)
	binary.Request.Body = cassette.Body{0xff, 0x00, 'x'}
	binary.Response.Events = []cassette.Event{{AtMillis: 1, Data: cassette.Body{0xfe, '\n', '\n'}}}
	ct := &cassette.Contents{
		Meta:         store.Meta{FormatVersion: store.FormatVersion, Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Version: "fuzz"},
		Interactions: []*cassette.Interaction{plain, sample(2), binary},
		Fixtures:     map[string]json.RawMessage{"call_weather": json.RawMessage(`{"value":42}`), "call_x": json.RawMessage(`[1,"a",null]`)},
	}
	for i, x := range ct.Interactions {
		x.ID = uint64(i + 1)
	}
	var b bytes.Buffer
	if err := cassette.WriteExport(&b, ct); err != nil {
		f.Fatal(err)
	}
	return b.Bytes()
}

// FuzzReadExport checks import: no input makes ReadExport panic; every
// error is ErrBadExport or store.ErrFormatVersion; and whatever it accepts
// exports again, that export reads back, and a second export is the same
// bytes (export → import → export is stable).
func FuzzReadExport(f *testing.F) {
	good := seedExport(f)
	f.Add(good)
	s := string(good)
	for _, edit := range [][2]string{
		{`"id": 1,`, `"id": 2,`},
		{`"method": "POST"`, `"method": ""`},
		{`"status": 429`, `"status": 99`},
		{`"framing": "sse"`, `"framing": "xml"`},
		{`"format_version": 1`, `"format_version": 2`},
		{`"call_weather": {`, `"": {`},
		{`"body": {`, `"body": {"base64": "!!"}, "x": {`},
		{`"at_ms": 1`, `"at_ms": "soon"`},
		{`"headers": {`, `"headers": [`},
	} {
		f.Add([]byte(strings.Replace(s, edit[0], edit[1], 1)))
	}
	f.Add([]byte(`{"format":"llmproxy-cassette","meta":{"format_version":1},"interactions":[],"fixtures":{}}`))
	f.Add([]byte(`{"format":"llmproxy-cassette","meta":{"format_version":1},"interactions":null,"fixtures":null}`))
	f.Add([]byte(`{"format":"llmproxy-cassette","meta":{"format_version":1},"interactions":[null]}`))
	f.Add([]byte(s[:len(s)/3]))
	f.Add([]byte(`[]`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		ct, err := cassette.ReadExport(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, cassette.ErrBadExport) && !errors.Is(err, store.ErrFormatVersion) {
				t.Fatalf("ReadExport error %v is neither ErrBadExport nor ErrFormatVersion", err)
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		var first bytes.Buffer
		if err := cassette.WriteExport(&first, ct); err != nil {
			t.Fatalf("an accepted export does not export again: %v", err)
		}
		ct2, err := cassette.ReadExport(bytes.NewReader(first.Bytes()))
		if err != nil {
			t.Fatalf("a written export does not read back: %v\n%s", err, first.Bytes())
		}
		var second bytes.Buffer
		if err := cassette.WriteExport(&second, ct2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("export → import → export differs:\n%s\n---\n%s", first.Bytes(), second.Bytes())
		}
	})
}

// FuzzBody checks that every byte string survives a JSON round trip as a
// Body, and that no JSON value makes Body.UnmarshalJSON panic.
func FuzzBody(f *testing.F) {
	for _, b := range []string{"", "plain", "\xff\x00", `{"base64":"AAAA"}`, `"\u00e9"`, "null", `{"base64":"!!"}`, "42"} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		enc, err := json.Marshal(cassette.Body(data))
		if err != nil {
			t.Fatalf("Marshal(%q): %v", data, err)
		}
		var got cassette.Body
		if err := json.Unmarshal(enc, &got); err != nil {
			t.Fatalf("Unmarshal(%s): %v", enc, err)
		}
		if !bytes.Equal(got, data) && !(len(got) == 0 && len(data) == 0) {
			t.Fatalf("round trip of %q via %s gave %q", data, enc, got)
		}
		var raw cassette.Body
		_ = raw.UnmarshalJSON(data)
	})
}
