package match_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
	"github.com/llmproxy/llmproxy/match"
)

// fuzzBodies are seeds for the matching fuzzers: LLM requests, number
// spellings, escapes, nesting, and things that are not JSON.
var fuzzBodies = []string{
	`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"What's the weather in Paris?"}],"temperature":0.7}`,
	`{"messages":[{"content":"What's the weather in Paris?","role":"user"}],"temperature":7e-1,"model":"gpt-4o-mini"}`,
	`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"weather","parameters":{"type":"object"}}]}]}`,
	`{"a":1.0,"b":-0,"c":1e2,"d":100,"e":0.000001,"f":1E-6,"g":12345678901234567890123}`,
	`{"big":1e1000000,"bigger":1e1000001,"long":0.30000000000000004,"tiny":5e-324,"wide":1.7976931348623157e308}`,
	`{"s":"\u00e9\u0041\n\t\"\\\/","t":"é","u":"\ud83d\ude00"}`,
	`{"dup":1,"dup":2}`,
	` [ 1 , [ 2 , [ 3 ] ] , { } , [ ] , null , true , false ] `,
	`"just a string"`,
	`42`,
	`{"model":"x","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`,
	`{"unterminated":`,
	`not json at all`,
	"{\"bad utf8\":\"\xff\xfe\"}",
	``,
	`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]`,
}

// fuzzKinds are the API kinds the fuzzers pick from: LLM kinds compare a
// body as JSON whatever its Content-Type, generic ones only when declared.
var fuzzKinds = []string{"openai-chat", "anthropic-messages", "gemini", "generic", ""}

func fuzzRequest(kind uint8, declared bool, query string, body []byte) *match.Request {
	h := http.Header{}
	if declared {
		h.Set("Content-Type", "application/json; charset=utf-8")
	}
	return &match.Request{Method: "POST", Upstream: "openai", Path: "/v1/chat/completions", Query: query,
		Header: h, Body: body, Kind: fuzzKinds[int(kind)%len(fuzzKinds)]}
}

// respelled is body written differently with the same structure: keys
// sorted, whitespace removed, strings re-escaped, numbers as written. ok is
// false when body is not one JSON value, or holds a duplicate key (which
// decoding into a map would drop).
func respelled(body []byte) (out []byte, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() || members(gjson.ParseBytes(body)) != count(v) {
		return nil, false
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(true) // <, > and & become \u003c…, another spelling
	if enc.Encode(v) != nil {
		return nil, false
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), true
}

// tooDeep reports whether b nests more than match.MaxDepth levels.
func tooDeep(b []byte) bool {
	d, in := 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == '{' || c == '['):
			if d++; d > match.MaxDepth {
				return true
			}
		case !in && (c == '}' || c == ']'):
			d--
		}
	}
	return false
}

// outOfRange reports whether a JSON body holds a number beyond the
// exponent bound: one that need not be JSON is then compared by bytes.
func outOfRange(b []byte) bool {
	_, err := jsonvalue.Canonical(b)
	return errors.Is(err, jsonvalue.ErrNumberRange)
}

// members counts the object members and array elements in a gjson value.
func members(r gjson.Result) int {
	n := 0
	if !r.IsObject() && !r.IsArray() {
		return 0 // ForEach would call back with r itself
	}
	r.ForEach(func(_, v gjson.Result) bool {
		n += 1 + members(v)
		return true
	})
	return n
}

// count is members for a decoded value.
func count(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			n += 1 + count(e)
		}
	case []any:
		for _, e := range v {
			n += 1 + count(e)
		}
	}
	return n
}

// FuzzCanonicalBody checks structural canonicalisation: it never panics; a
// body that should be JSON and is not is ErrMalformedJSON or ErrTooDeep (or
// ErrNumberRange, for a number beyond the exponent bound); a body compared
// by bytes (not JSON, nested too deep, or with a number out of range when
// it need not be JSON) is its own canonical form; the canonical form of
// JSON is the same for the body indented and for the body re-spelled (keys
// reordered, whitespace, escapes), and is its own canonical form when it is
// JSON; a request never differs from itself; the query is compared
// order-insensitively.
func FuzzCanonicalBody(f *testing.F) {
	for i, b := range fuzzBodies {
		f.Add([]byte(b), uint8(i), i%2 == 0, "b=2&a=1")
		f.Add([]byte(b), uint8(i+3), true, "")
	}
	m, err := match.New(match.Rules{}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, kind uint8, declared bool, query string) {
		r := fuzzRequest(kind, declared, query, body)
		key, err := m.Key(r)
		canon, cerr := m.CanonicalBody(r)
		if (err == nil) != (cerr == nil) {
			t.Fatalf("Key error %v, CanonicalBody error %v", err, cerr)
		}
		if err != nil {
			if !errors.Is(err, match.ErrMalformedJSON) && !errors.Is(err, match.ErrTooDeep) && !errors.Is(err, match.ErrNumberRange) {
				t.Fatalf("Key error %v is neither ErrMalformedJSON nor ErrTooDeep nor ErrNumberRange", err)
			}
			if r.Kind == "generic" || r.Kind == "" {
				if !declared {
					t.Fatalf("a generic body without a JSON Content-Type was refused: %v", err)
				}
			}
			return
		}
		if diffs, n := m.Diff(r, r, 0); n != 0 {
			t.Fatalf("a request differs from itself: %v", diffs)
		}
		trimmed := bytes.TrimLeft(body, " \t\r\n")
		llm := r.Kind != "generic" && r.Kind != ""
		structural := len(body) > 0 && gjson.ValidBytes(body) && !tooDeep(body) && !outOfRange(body) &&
			(llm || declared || (len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')))
		if !structural {
			if !bytes.Equal(canon, body) {
				t.Fatalf("a body compared by bytes has the canonical form %q, want itself", canon)
			}
			return
		}
		// Fractions are spelled p/q, so the canonical form is JSON only
		// without them; then it is its own canonical form.
		if json.Valid(canon) {
			again := fuzzRequest(kind, declared, query, canon)
			if c2, err := m.CanonicalBody(again); err != nil || !bytes.Equal(c2, canon) {
				t.Fatalf("canonical form is not canonical:\n%q\n%q (%v)", canon, c2, err)
			}
		}
		variants := map[string][]byte{}
		var ind bytes.Buffer
		if json.Indent(&ind, body, " ", "\t") == nil {
			variants["indented"] = ind.Bytes()
		}
		if re, ok := respelled(body); ok && utf8.Valid(body) { // encoding/json would replace bad UTF-8
			variants["re-spelled"] = re
		}
		for name, v := range variants {
			vr := fuzzRequest(kind, declared, query, v)
			k2, err := m.Key(vr)
			if err != nil {
				t.Fatalf("%s body %q: %v", name, v, err)
			}
			_, n := m.Diff(vr, r, 0)
			if k2 != key || n != 0 {
				c2, _ := m.CanonicalBody(vr)
				t.Fatalf("%s body matches differently (keys equal %v, %d differences):\n%q → %q\n%q → %q", name, k2 == key, n, body, canon, v, c2)
			}
		}
		// The query is compared order-insensitively.
		if parts := strings.Split(query, "&"); len(parts) > 1 && !strings.ContainsAny(query, ";%+") {
			slices.Reverse(parts)
			rev := fuzzRequest(kind, declared, strings.Join(parts, "&"), body)
			if k3, err := m.Key(rev); err != nil || k3 != key {
				t.Fatalf("query %q reversed does not match: %v", query, err)
			}
		}
	})
}

// FuzzKeyAgreesWithDiff sends two bodies: equal match keys must mean Diff
// finds nothing, and different keys a difference, so that a miss always
// explains itself.
func FuzzKeyAgreesWithDiff(f *testing.F) {
	for i := range fuzzBodies {
		for j := range fuzzBodies {
			if (i+j)%3 == 0 {
				f.Add([]byte(fuzzBodies[i]), []byte(fuzzBodies[j]), uint8(i), "metadata")
			}
		}
	}
	f.Add([]byte(`{"a":1,"user":"x"}`), []byte(`{"user":"y","a":1.0}`), uint8(0), "user")
	f.Add([]byte(`{"m":[{"id":1,"t":2}]}`), []byte(`{"m":[{"id":2,"t":2}]}`), uint8(1), "m.#.id")
	f.Fuzz(func(t *testing.T, a, b []byte, kind uint8, ignore string) {
		m, err := match.New(match.Rules{Ignore: []string{ignore}}, nil)
		if err != nil {
			if !errors.Is(err, match.ErrBadRule) {
				t.Fatalf("match.New error %v is not ErrBadRule", err)
			}
			return
		}
		ra, rb := fuzzRequest(kind, true, "", a), fuzzRequest(kind, true, "", b)
		ka, erra := m.Key(ra)
		kb, errb := m.Key(rb)
		diffs, n := m.Diff(ra, rb, 0)
		if erra != nil || errb != nil {
			return
		}
		if (ka == kb) != (n == 0) {
			ca, _ := m.CanonicalBody(ra)
			cb, _ := m.CanonicalBody(rb)
			t.Fatalf("keys equal: %v, differences: %d %v\n%q → %q\n%q → %q", ka == kb, n, diffs, a, ca, b, cb)
		}
		for _, d := range diffs {
			if d.Path == "" {
				t.Fatalf("a difference without a path: %+v", d)
			}
		}
	})
}
