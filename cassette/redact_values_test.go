package cassette

import (
	"net/http"
	"reflect"
	"slices"
	"testing"
)

// redactValues replaces key-shaped strings in a copy, leaving the request's
// own values as they were, and hands back values without one as they are,
// with no room to append into.
func TestRedactValues(t *testing.T) {
	key := "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
	in := make([]string, 3, 8)
	copy(in, []string{"a", "Bearer " + key, "c " + key})
	got := redactValues(in)
	if want := []string{"a", "Bearer " + Redacted, "c " + Redacted}; !slices.Equal(got, want) {
		t.Errorf("redacted %q, want %q", got, want)
	}
	if in[1] != "Bearer "+key || in[2] != "c "+key {
		t.Errorf("the request's own values changed: %q", in)
	}
	plain := in[:1]
	same := redactValues(plain)
	if !slices.Equal(same, plain) || cap(same) != len(same) {
		t.Errorf("values without a key: %q (cap %d), want %q with no spare capacity", same, cap(same), plain)
	}
}

// The shortest string of each key shape is redacted, and is no shorter than
// minKeyLen, below which findKeys does not look; one byte less of its body
// is no key.
func TestMinKeyLen(t *testing.T) {
	for _, shortest := range []string{
		"AKIA" + "IOSFODNN7EXAMPLE", "ASIA" + "Y34FZKBOKMUTVV7A",
		"sk-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn",
		"eyJhbGciOi" + "." + "eyJzdWIiOi" + ".",
		"AIza" + "SyD3vT9mLp2RkZ8wYc4NfHb6JdS1aUe7G-Q",
	} {
		if got := RedactKeysString(shortest); got != Redacted {
			t.Errorf("%q redacted to %q, want %q", shortest, got, Redacted)
		}
		if len(shortest) < minKeyLen {
			t.Errorf("%q is a key of %d bytes, shorter than minKeyLen %d", shortest, len(shortest), minKeyLen)
		}
		short := shortest[:len(shortest)-2] + shortest[len(shortest)-1:]
		if got := RedactKeysString(short); got != short {
			t.Errorf("%q, one byte short of the shortest key, redacted to %q", short, got)
		}
	}
	if minKeyLen != len("AKIA"+"IOSFODNN7EXAMPLE") {
		t.Errorf("minKeyLen %d, want the length of the shortest key, %d", minKeyLen, len("AKIAIOSFODNN7EXAMPLE"))
	}
}

// HeadersOnlyInto keeps exactly the named headers HeadersInto keeps, with
// the same values: secret headers redacted, key-shaped strings redacted,
// framing and llmproxy's own headers dropped, keys that arrive unspelled
// canonical found by their canonical name; and an empty list keeps none.
func TestHeadersOnlyInto(t *testing.T) {
	r, err := NewRedactor([]string{"X-Team-Token"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
	h := http.Header{
		"Content-Type":     {"application/json"},
		"Authorization":    {"Bearer " + key},
		"X-Team-Token":     {"t0k"},
		"X-Trace":          {"a", "b " + key},
		"x-tenant":         {"acme"}, // set by hand, not canonical
		"Content-Length":   {"12"},
		"Connection":       {"keep-alive"},
		"X-Llmproxy-Fault": {"429"},
		"User-Agent":       {"sdk/1"},
	}
	all := r.HeadersInto(nil, h)
	for _, names := range [][]string{
		{"Content-Type"},
		{"Authorization", "Content-Type", "X-Trace"},
		{"X-Team-Token", "X-Tenant"},
		{"Connection", "Content-Length", "X-Llmproxy-Fault", "X-Absent"},
		{},
	} {
		want := http.Header{}
		for _, n := range names {
			if vs, ok := all[n]; ok {
				want[n] = vs
			}
		}
		reused := http.Header{"Stale": {"x"}}
		got := r.HeadersOnlyInto(reused, h, names)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("names %q: got %q, want %q", names, got, want)
		}
		if _, stale := got["Stale"]; stale {
			t.Errorf("names %q: the map handed back kept an earlier header", names)
		}
	}
}
