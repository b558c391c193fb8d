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
