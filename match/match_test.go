package match_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/match"
)

func req(body string) *match.Request {
	return &match.Request{Method: "POST", Upstream: "openai", Path: "/v1/chat/completions",
		Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body), Kind: "openai-chat"}
}

func mustMatcher(t *testing.T, r match.Rules) *match.Matcher {
	t.Helper()
	m, err := match.New(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func key(t *testing.T, m *match.Matcher, r *match.Request) string {
	t.Helper()
	k, err := m.Key(r)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestStructuralEquality(t *testing.T) {
	m := mustMatcher(t, match.Rules{Ignore: []string{"metadata", "messages.#.name", "user"}})
	base := `{"model":"m","temperature":1,"messages":[{"role":"user","content":"hé"}]}`
	for _, tc := range []struct {
		name, body string
		same       bool
	}{
		{"key order and spaces", "{ \"messages\" : [ {\"content\":\"hé\",\"role\":\"user\"} ],\n \"temperature\":1, \"model\":\"m\"}", true},
		{"number spelling", `{"model":"m","temperature":1.0,"messages":[{"role":"user","content":"hé"}]}`, true},
		{"exponent", `{"model":"m","temperature":1e0,"messages":[{"role":"user","content":"hé"}]}`, true},
		{"string escape", `{"model":"m","temperature":1,"messages":[{"role":"user","content":"h\u00e9"}]}`, true},
		{"ignored path", `{"model":"m","temperature":1,"metadata":{"run":7},"user":"u1","messages":[{"role":"user","content":"hé","name":"x"}]}`, true},
		{"changed value", `{"model":"m","temperature":0.5,"messages":[{"role":"user","content":"hé"}]}`, false},
		{"changed type", `{"model":"m","temperature":"1","messages":[{"role":"user","content":"hé"}]}`, false},
		{"array order", `{"model":"m","temperature":1,"messages":[{"role":"user","content":"hé"},{"role":"user","content":"x"}]}`, false},
	} {
		got := key(t, m, req(tc.body)) == key(t, m, req(base))
		if got != tc.same {
			t.Errorf("%s: same key = %v, want %v", tc.name, got, tc.same)
		}
	}
}

func TestQueryAndSecrets(t *testing.T) {
	m := mustMatcher(t, match.Rules{SecretQuery: []string{"key"}})
	a := req(`{}`)
	a.Query = "alt=sse&b=2&key=AAA"
	b := req(`{}`)
	b.Query = "b=2&key=BBB&alt=sse"
	if key(t, m, a) != key(t, m, b) {
		t.Error("query order or secret key changed the match key")
	}
	b.Query = "b=3&alt=sse"
	if key(t, m, a) == key(t, m, b) {
		t.Error("changed query value kept the match key")
	}
}

func TestHeadersOnlyWhenConfigured(t *testing.T) {
	a, b := req(`{}`), req(`{}`)
	b.Header = http.Header{"Content-Type": {"application/json"}, "Openai-Beta": {"assistants=v2"}}
	if key(t, mustMatcher(t, match.Rules{}), a) != key(t, mustMatcher(t, match.Rules{}), b) {
		t.Error("an unconfigured header changed the key")
	}
	m := mustMatcher(t, match.Rules{Headers: []string{"openai-beta"}})
	if key(t, m, a) == key(t, m, b) {
		t.Error("a configured header did not change the key")
	}
}

func TestMalformedJSON(t *testing.T) {
	m := mustMatcher(t, match.Rules{})
	for _, body := range []string{`{"model":`, `{"a":1}}`, `not json`} {
		if _, err := m.Key(req(body)); !errors.Is(err, match.ErrMalformedJSON) {
			t.Errorf("Key(%q) error = %v, want ErrMalformedJSON", body, err)
		}
	}
	plain := &match.Request{Method: "POST", Path: "/upload", Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("not json"), Kind: "generic"}
	if _, err := m.Key(plain); err != nil {
		t.Errorf("a text body is not JSON and is fine: %v", err)
	}
}

func TestBadRules(t *testing.T) {
	for _, r := range []match.Rules{{Ignore: []string{""}}, {Ignore: []string{"a..b"}}, {Headers: []string{" "}}} {
		if _, err := match.New(r, nil); !errors.Is(err, match.ErrBadRule) {
			t.Errorf("New(%+v) = %v, want ErrBadRule", r, err)
		}
	}
}

func TestDiffNamesFirstPath(t *testing.T) {
	describe := func(kind string, body []byte, path string) string {
		if strings.HasPrefix(path, "messages.1") {
			return "messages[1] (user)"
		}
		return ""
	}
	m, _ := match.New(match.Rules{}, describe)
	recorded := req(`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"What's the weather in Paris?"}]}`)
	live := req(`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"What's the weather in Rome?"}],"n":2}`)
	diffs, n := m.Diff(live, recorded, 5)
	if n != 2 || len(diffs) != 2 {
		t.Fatalf("Diff = %v (%d), want 2 differences", diffs, n)
	}
	d := diffs[0]
	if d.Path != "messages.1.content" || d.Where != "messages[1] (user)" || !strings.Contains(d.Got, "Rome") || !strings.Contains(d.Want, "Paris") {
		t.Errorf("first difference = %+v", d)
	}
	if diffs[1].Path != "n" || diffs[1].Want != "(absent)" {
		t.Errorf("second difference = %+v", diffs[1])
	}
	if _, n := m.Diff(recorded, recorded, 5); n != 0 {
		t.Errorf("Diff of a request with itself found %d differences", n)
	}
}

func TestDiffShortensAroundDifference(t *testing.T) {
	m := mustMatcher(t, match.Rules{})
	long := strings.Repeat("lorem ipsum ", 20)
	diffs, _ := m.Diff(req(`{"p":"`+long+`A"}`), req(`{"p":"`+long+`B"}`), 1)
	if len(diffs) != 1 || diffs[0].Got == diffs[0].Want {
		t.Fatalf("shortened values look the same: %+v", diffs)
	}
	if len([]rune(diffs[0].Got)) > 70 {
		t.Errorf("value not shortened: %q", diffs[0].Got)
	}
}

// Numbers are compared by value whatever their size, and one whose
// magnitude is past the bound is refused, naming its path.
func TestNumbers(t *testing.T) {
	m := mustMatcher(t, match.Rules{})
	for _, pair := range [][2]string{
		{`{"x":1e1000000}`, `{"x":10e999999}`},
		{`{"x":100000000000000000000000}`, `{"x":1e23}`},
		{`{"x":0.30000000000000004}`, `{"x":30000000000000004e-17}`},
	} {
		if key(t, m, req(pair[0])) != key(t, m, req(pair[1])) {
			t.Errorf("%s and %s: different keys for the same value", pair[0], pair[1])
		}
	}
	if key(t, m, req(`{"x":1e1000000}`)) == key(t, m, req(`{"x":1e999999}`)) {
		t.Error("1e1000000 and 1e999999 have the same key")
	}
	_, err := m.Key(req(`{"messages":[{"n":1e1000001}]}`))
	if !errors.Is(err, match.ErrNumberRange) || !strings.Contains(err.Error(), "messages.0.n: number 1e1000001") {
		t.Errorf("Key error = %v, want ErrNumberRange at messages.0.n", err)
	}
	if _, err := m.Key(req(string(hugeExponents()))); err != nil {
		t.Errorf("two hundred 1e1000000: %v", err)
	}
}

// A request holding only the headers HeadersRead names gets the key and the
// differences of the request holding them all: Content-Type decides
// whether a body is compared as JSON, and compared headers count.
func TestHeadersRead(t *testing.T) {
	m, err := match.New(match.Rules{Headers: []string{"x-tenant", "content-type"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.HeadersRead(), ","); got != "Content-Type,X-Tenant" {
		t.Errorf("HeadersRead = %s, want Content-Type,X-Tenant", got)
	}
	plain, err := match.New(match.Rules{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	full := http.Header{"Content-Type": {"application/json; charset=utf-8"}, "X-Tenant": {"acme"}, "User-Agent": {"sdk/1"}, "X-Trace": {"abc"}}
	other := &match.Request{Method: "POST", Upstream: "openai", Path: "/v1/x", Body: []byte(`{"b":1,"a":2}`),
		Header: http.Header{"Content-Type": {"application/json"}, "X-Tenant": {"other"}}}
	for _, m := range []*match.Matcher{m, plain} {
		only := http.Header{}
		for _, n := range m.HeadersRead() {
			only[n] = full[n]
		}
		r := func(h http.Header) *match.Request {
			return &match.Request{Method: "POST", Upstream: "openai", Path: "/v1/x", Body: []byte(`{"a":2, "b":1}`), Header: h}
		}
		k1, err1 := m.Key(r(full))
		k2, err2 := m.Key(r(only))
		if err1 != nil || err2 != nil || k1 != k2 {
			t.Errorf("headers %q: key %s (%v) with every header, %s (%v) with those read", m.HeadersRead(), k1, err1, k2, err2)
		}
		d1, n1 := m.Distance(r(full), other, 3)
		d2, n2 := m.Distance(r(only), other, 3)
		if n1 != n2 || len(d1) != len(d2) {
			t.Errorf("headers %q: differences %v (%d) with every header, %v (%d) with those read", m.HeadersRead(), d1, n1, d2, n2)
		}
	}
	// Content-Type says whether a generic body must be JSON: one that is
	// not is an error when declared so, else compared by its bytes. So the
	// header is read.
	g := func(h http.Header) *match.Request {
		return &match.Request{Method: "POST", Upstream: "u", Path: "/p", Kind: "generic", Body: []byte(`{"a":`), Header: h}
	}
	_, declared := plain.Key(g(http.Header{"Content-Type": {"application/json"}}))
	_, undeclared := plain.Key(g(http.Header{}))
	if !errors.Is(declared, match.ErrMalformedJSON) || undeclared != nil {
		t.Errorf("a broken generic body: %v declared JSON, %v not: want ErrMalformedJSON, then nil", declared, undeclared)
	}
}
