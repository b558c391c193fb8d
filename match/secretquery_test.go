package match_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/match"
)

// secretRules are the query rules the proxy runs with: the default secret
// names, and one ignored name.
var secretRules = match.Rules{SecretQuery: []string{"key", "api_key", "access_token"}, IgnoreQuery: []string{"api-version"}}

// TestSecretQuerySpellings: a secret query parameter is left out of the
// match key and of the differences in every spelling — any case, its name
// escaped, separated by ';' — so that a request with it, without it or
// with another value matches; and the key and the differences agree on
// every pair of these queries (equal keys exactly when there is no
// difference), naming only a parameter that is compared.
func TestSecretQuerySpellings(t *testing.T) {
	m, err := match.New(secretRules, nil)
	if err != nil {
		t.Fatal(err)
	}
	same := [][]string{ // each row: queries that must all match one another
		{"alt=sse", "alt=sse&key=REDACTED", "alt=sse&KEY=REDACTED", "KEY=REDACTED&alt=sse", "alt=sse&Key=x",
			"alt=sse&ke%79=REDACTED", "alt=sse&K%45Y=x", "alt=sse;key=REDACTED", "key=REDACTED;alt=sse",
			"alt=sse;KEY=x;api_key=y", "alt=sse&Api_Key=REDACTED", "alt=sse&API_KEY=x", "alt=sse&api%5Fkey=x",
			"alt=sse&access_token=REDACTED", "alt=sse&Access_Token=x", "alt=sse&ACCESS%5FTOKEN=x", "alt=sse&access%5ftoken=x",
			"alt=sse;access_token=x", "alt=sse&api-version=1", "alt=sse&API-Version=2", "alt=sse&key", "alt=sse&&key=x&"},
		{"a=1&b=2", "b=2&a=1", "a=1;b=2", "b=2;a=1", "a=1;b=2&KEY=x", "a=1&b=2;ke%79=x", "a=%31&b=2"},
		{"q=a+b", "q=a%20b", "q=a+b;key=x"},
	}
	for _, row := range same {
		for _, q := range row[1:] {
			agree(t, m, row[0], q, true)
		}
	}
	for i, row := range same {
		for _, other := range same[i+1:] {
			agree(t, m, row[len(row)-1], other[len(other)-1], false)
		}
	}
	for _, tc := range []struct{ got, want, path string }{
		{"alt=sse;key=x", "alt=json;key=y", "query.alt"},
		{"a=1;b=2;KEY=x", "a=1;b=3", "query.b"},
		{"a=1&ke%79=x", "a=2&Key=y", "query.a"},
		{"a=1;c", "a=1", "query.c"},
	} {
		agree(t, m, tc.got, tc.want, false)
		diffs, _ := m.Diff(&match.Request{Method: "GET", Path: "/x", Query: tc.got}, &match.Request{Method: "GET", Path: "/x", Query: tc.want}, 0)
		if len(diffs) != 1 || diffs[0].Path != tc.path {
			t.Errorf("%q against %q: differences %v, want one at %s", tc.got, tc.want, diffs, tc.path)
		}
	}
}

// agree checks that the keys of two queries are equal exactly when the
// differences are none, and that they match as want says.
func agree(t *testing.T, m *match.Matcher, a, b string, want bool) {
	t.Helper()
	ra := &match.Request{Method: "GET", Path: "/v1/models", Query: a}
	rb := &match.Request{Method: "GET", Path: "/v1/models", Query: b}
	ka, err := m.Key(ra)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := m.Key(rb)
	if err != nil {
		t.Fatal(err)
	}
	diffs, n := m.Diff(ra, rb, 0)
	if (ka == kb) != (n == 0) {
		t.Errorf("%q against %q: keys equal %v, but %d differences %v", a, b, ka == kb, n, diffs)
	}
	if (ka == kb) != want {
		t.Errorf("%q against %q: matched %v, want %v (differences %v)", a, b, ka == kb, want, diffs)
	}
	for _, d := range diffs {
		name := strings.ToLower(strings.TrimPrefix(d.Path, "query."))
		if name == "key" || name == "api_key" || name == "access_token" || name == "api-version" || strings.Contains(fmt.Sprint(d), "%") {
			t.Errorf("%q against %q: a difference at a parameter never compared: %v", a, b, d)
		}
	}
}
