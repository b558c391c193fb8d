package query_test

import (
	"testing"

	"github.com/llmproxy/llmproxy/internal/query"
)

func TestCutAndParam(t *testing.T) {
	var got [][3]string
	for rest := "a=1;KE%59=x+y&&b&c=%zz"; rest != ""; {
		var p string
		var sep byte
		p, sep, rest = query.Cut(rest)
		name, value := query.Param(p)
		got = append(got, [3]string{name, value, string(rune(sep))})
	}
	want := [][3]string{{"a", "1", ";"}, {"KEY", "x y", "&"}, {"", "", "&"}, {"b", "", "&"}, {"c", "%zz", "\x00"}}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("parameter %d: got %q, want %q", i, got[i], want[i])
		}
	}
}

func TestNamed(t *testing.T) {
	rules := []string{"key", "api_key", "access_token"}
	for name, want := range map[string]bool{"key": true, "KEY": true, "Api_Key": true, "ACCESS_TOKEN": true, "keys": false, "": false, "api-key": false} {
		if got := query.Named(name, rules); got != want {
			t.Errorf("Named(%q) = %v, want %v", name, got, want)
		}
	}
}
