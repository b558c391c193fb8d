package cassette

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/store"
)

// exportSeed is an export with every kind of field the fast reader reads:
// a plain and a streamed interaction, bodies that need escapes, a query,
// fixtures. (A body that is not UTF-8 is written as base64, which the
// fast reader leaves to encoding/json: a case below.)
func exportSeed(t testing.TB) []byte {
	t.Helper()
	plain := &Interaction{ID: 1, Upstream: "openai", Provider: "openai", Kind: "openai-chat",
		RecordedAt: time.Date(2026, 12, 2, 10, 0, 1, 5, time.UTC),
		Request: Request{Method: "POST", Path: "/v1/chat/completions", Query: "alt=sse&key=REDACTED",
			Headers: http.Header{"Content-Type": {"application/json"}},
			Body:    Body(`{"messages":[{"role":"user","content":"<hi> & \u00e9 \"q\" \\ \u2028"}]}`)},
		Response: Response{Status: 429, Headers: http.Header{"Retry-After": {"2"}, "X-Two": {"a", "b"}},
			Body: Body(`{"error":{"message":"slow down"}}`), TTFBMillis: 1.5, DurationMillis: 2},
	}
	stream := &Interaction{ID: 2, Upstream: "default", Kind: "generic",
		Request: Request{Method: "GET", Path: "/x", Body: Body("\x00\x1f\x7f")},
		Response: Response{Status: 200, Framing: "sse", Events: []Event{
			{AtMillis: 1, Data: Body("data: {}\n\n")}, {AtMillis: 2.25, Data: Body("data: [DONE]\n\n")}}},
	}
	ct := &Contents{
		Meta:         store.Meta{FormatVersion: store.FormatVersion, Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Version: "seed"},
		Interactions: []*Interaction{plain, stream},
		Fixtures:     map[string]json.RawMessage{"call_weather": json.RawMessage(`{"value":42}`), "call_x": json.RawMessage(`[1,"a",null]`)},
	}
	var b bytes.Buffer
	if err := WriteExport(&b, ct); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// readExportSlow is what ReadExport does with encoding/json.
func readExportSlow(data []byte) (exportFile, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f exportFile
	if err := dec.Decode(&f); err != nil || dec.More() {
		return exportFile{}, false
	}
	return f, true
}

// checkExportFast fails the test when readExportFast accepts data and
// encoding/json does not, or reads it otherwise.
func checkExportFast(t *testing.T, data []byte) bool {
	t.Helper()
	fast, ok := readExportFast(data)
	if !ok {
		return false
	}
	slow, sok := readExportSlow(data)
	if !sok {
		t.Fatalf("readExportFast accepts what encoding/json refuses:\n%s", data)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("readExportFast reads\n%+v\nencoding/json reads\n%+v\nfrom\n%s", fast, slow, data)
	}
	return true
}

// TestReadExportFast: the fast reader reads exports as encoding/json does,
// and leaves to it everything it does not fully understand.
func TestReadExportFast(t *testing.T) {
	good := string(exportSeed(t))
	if !checkExportFast(t, []byte(good)) {
		t.Fatal("the fast reader does not accept a written export")
	}
	compact := new(bytes.Buffer)
	if err := json.Compact(compact, []byte(good)); err != nil {
		t.Fatal(err)
	}
	if !checkExportFast(t, compact.Bytes()) {
		t.Fatal("the fast reader does not accept a compact export")
	}
	for _, tc := range []struct {
		name, from, to string
		fast           bool // the fast reader accepts it
	}{
		{"no interactions", `"interactions": [`, `"interactions": [], "x": [`, false},
		{"unknown field", `"format": `, `"formats": 1, "format": `, false},
		{"key in other case", `"format": `, `"Format": `, false},
		{"repeated key", `"format": `, `"format": "x", "format": `, false},
		{"null fixtures", `"fixtures": {`, `"fixtures": null, "y": {`, false},
		{"null interaction", `"interactions": [`, `"interactions": [null, `, false},
		{"trailing data", "\n}\n", "\n}\n{}", false},
		{"unknown interaction field", `"upstream": `, `"upstreams": "a", "upstream": `, false},
		{"missing comma", `},
    {
      "id": 2`, `}
    {
      "id": 2`, false},
		{"escaped key", `"meta": `, `"m\u0065ta": `, true},
		{"fixture with strings and brackets", `"call_weather": {`, `"call_z": {"a": "]}\"["}, "call_weather": {`, true},
		{"white space", `"format": `, "\"format\"\t:\r\n ", true},
		{"base64 body", `"body": "{\"error\":{\"message\":\"slow down\"}}"`, `"body": {"base64": "/wB4"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := strings.Replace(good, tc.from, tc.to, 1)
			if data == good {
				t.Fatal("the edit changed nothing")
			}
			if got := checkExportFast(t, []byte(data)); got != tc.fast {
				t.Errorf("the fast reader accepts it: %v, want %v", got, tc.fast)
			}
		})
	}
}

// FuzzReadExportFast: on every input the fast reader accepts, encoding/json
// accepts it too and reads the same.
func FuzzReadExportFast(f *testing.F) {
	good := exportSeed(f)
	f.Add(good)
	f.Add([]byte(`{"format":"llmproxy-cassette","meta":{"format_version":1},"interactions":[],"fixtures":{}}`))
	f.Add([]byte(`{"interactions":[{"id":1},{"id":2}],"fixtures":{"a":[1,{"b":"}"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkExportFast(t, data)
	})
}
