package cassette

import (
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
