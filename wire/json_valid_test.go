package wire

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// validSeeds are documents at the edges of JSON's grammar: what
// checkJSON and json.Valid must agree on, one way or the other.
var validSeeds = []string{
	``, ` `, `{}`, `[]`, `""`, `0`, `-0`, `1.5e+3`, `true`, `false`, `null`,
	`{"a":1}`, ` {"a" : [1, 2, {"b":null}] } `, "{\"a\":1}\n", "\t[\r\n]",
	`01`, `-`, `-a`, `1.`, `.5`, `1e`, `1e+`, `+1`, `0x1`, `1.5E-0`, `-01`, `1true`,
	`tru`, `nul`, `falsey`, `True`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a"}`, `{"a":}`, `{a:1}`,
	`{"a":1"b":2}`, `[1 2]`, `{"a":1}}`, `[[]`, `"a" "b"`, `{} {}`,
	`"\u00e9"`, `"\u00g9"`, `"\u12"`, `"\x"`, `"\/\b\f\n\r\t\"\\"`, `"a` + "\x01" + `"`, `"a` + "\x7f" + `"`,
	"\"\xff\xfe\"", "\"\xc3\"", "\xef\xbb\xbf{}", `"unterminated`, `{"a":"b\"}`, "{\"a\":1}\x00",
	"\u00a0{}", `[1,2,3]garbage`, `{"a":[1,{"b":"]}"}]}`,
	strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth),
	strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
	strings.Repeat(`{"a":`, maxDepth) + "1" + strings.Repeat("}", maxDepth),
	strings.Repeat(`{"a":`, maxDepth+1) + "1" + strings.Repeat("}", maxDepth+1),
	strings.Repeat("[", maxDepth+1) + `"` + strings.Repeat("]", maxDepth+1),
	`["` + strings.Repeat("[", maxDepth+5) + `"]`,
}

// TestCheckJSONIsJSONValid: checkJSON accepts a document exactly when
// json.Valid does. Mock relies on it to check a request body once
// (ParseRequest's check) instead of twice. (Its check, jsonvalue.Valid,
// is tested against json.Valid on its own too.)
func TestCheckJSONIsJSONValid(t *testing.T) {
	for _, s := range validSeeds {
		if got, want := checkJSON([]byte(s)) == nil, json.Valid([]byte(s)); got != want {
			t.Errorf("%.60q: checkJSON accepts: %v, json.Valid: %v", s, got, want)
		}
	}
}

// FuzzCheckJSON checks TestCheckJSONIsJSONValid's rule on any input; and
// that a chat request ParseRequest reads is one json.Valid accepts.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Paris?"}],"stream":true}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := checkJSON(b) == nil, json.Valid(b); got != want {
			t.Fatalf("%q: checkJSON accepts: %v, json.Valid: %v", b, got, want)
		}
		if _, err := ParseRequest(KindOpenAIChat, "/v1/chat/completions", b); err == nil && !json.Valid(b) {
			t.Fatalf("%q: ParseRequest reads what json.Valid refuses", b)
		}
	})
}

// firstMemberSeeds are objects whose members firstMembers must read as
// gjson's Get does: repeated keys, escaped keys, null and nested values,
// keys that are gjson path syntax elsewhere.
var firstMemberSeeds = []string{
	`{}`, `[]`, `"role"`, `null`,
	`{"role":"user","content":"hi","role":"tool"}`,
	`{"ro\u006ce":"user","role":"tool"}`, `{"role":null,"role":"user"}`,
	`{"content":[{"type":"text","text":"a"}],"tool_calls":{"a":1},"name":1}`,
	`{ "tool_call_id" : "c1" , "content" : "{\"a\":1}" , "tool_name":"t"}`,
	`{"a":{"role":"inner"},"role":"outer"}`, `{"role.x":"a","role":"b"}`,
}

// TestFirstMembers: firstMembers gives, for each key, what Get gives.
func TestFirstMembers(t *testing.T) {
	for _, s := range firstMemberSeeds {
		checkFirstMembers(t, []byte(s))
	}
}

// FuzzFirstMembers checks TestFirstMembers's rule on any valid JSON.
func FuzzFirstMembers(f *testing.F) {
	for _, s := range firstMemberSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if checkJSON(b) == nil {
			checkFirstMembers(t, b)
		}
	})
}

func checkFirstMembers(t *testing.T, b []byte) {
	t.Helper()
	doc, err := parseDoc(b)
	if err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	keys := append(slices.Clone(messageMembers), chatMembers...)
	got := make([]gjson.Result, len(keys))
	firstMembers(doc, keys, got)
	for i, k := range keys {
		want := gjson.Result{}
		if doc.IsObject() {
			want = doc.Get(k)
		}
		if !want.Exists() && !got[i].Exists() {
			continue // an absent member's other fields say nothing
		}
		if got[i].Raw != want.Raw || got[i].Str != want.Str || got[i].Type != want.Type || got[i].Index != want.Index {
			t.Errorf("%q: member %q: %+v, Get gives %+v", b, k, got[i], want)
		}
	}
}
