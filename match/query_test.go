package match_test

import (
	"strings"
	"testing"

	"github.com/llmproxy/llmproxy/match"
)

// queries are seeds for the query checks: plain ones the quick path
// sorts, and escapes, semicolons and long queries it hands over.
var queries = []string{
	"", "a", "a=", "=v", "&", "&&a=1&", "b=2&a=1", "a=2&a=1&a=10&a=", "alt=sse&key=AAA&b=2",
	"api-version=2024-06-01&b=2", "x=a/b:c&y=é&z=<>", "k=v=w", "a=1&A=1&_=1",
	"a=%41&b=1", "a=%zz", "a+b=c+d", "a=1;b=2", "a=1&b=2;c", strings.Repeat("p=1&", 15) + "p=0", strings.Repeat("q&", 40),
}

// The match key of earlier releases hashes canonQuery's spelling; the
// quick path must give the very same bytes.
func TestAppendQueryIsCanonQuery(t *testing.T) {
	for _, rules := range []match.Rules{{}, {IgnoreQuery: []string{"b", ""}, SecretQuery: []string{"key"}}} {
		m, err := match.New(rules, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range queries {
			if got, want := m.AppendQuery(q), m.CanonQuery(q); got != want {
				t.Errorf("query %q (rules %v): appended %q, canonical %q", q, rules, got, want)
			}
		}
	}
}

func FuzzAppendQuery(f *testing.F) {
	for _, q := range queries {
		f.Add(q)
	}
	m, err := match.New(match.Rules{SecretQuery: []string{"key"}}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if got, want := m.AppendQuery(q), m.CanonQuery(q); got != want {
			t.Fatalf("query %q: appended %q, canonical %q", q, got, want)
		}
	})
}
