package jsonvalue_test

import (
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
)

func spell(t testing.TB, raw string) string {
	t.Helper()
	b, err := jsonvalue.AppendNumber(nil, raw)
	if err != nil {
		t.Fatalf("AppendNumber(%q): %v", raw, err)
	}
	return string(b)
}

func TestNumberSpelling(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"0", "0"}, {"-0", "0"}, {"0.0", "0"}, {"-0e5", "0"}, {"0e999999999999", "0"},
		{"1", "1"}, {"1.0", "1"}, {"1e0", "1"}, {"10e-1", "1"}, {"100", "100"}, {"1e2", "100"}, {"1E+2", "100"},
		{"0.7", "7/10"}, {"7e-1", "7/10"}, {"-0.5", "-1/2"}, {"1.5", "3/2"}, {"0.000001", "1/1000000"}, {"1E-6", "1/1000000"},
		{"12345678901234567890123", "12345678901234567890123"},
		{"3.141592653589793", "3141592653589793/1000000000000000"},
		{"0.30000000000000004", "7500000000000001/25000000000000000"},
		// Past the box, or too long beside the exponent form.
		{"1e1000000", "1e1000000"}, {"-1e-1000000", "-1e-1000000"}, {"1e20", "1e20"}, {"100000000000000000000", "1e20"},
		{"1.7976931348623157e308", "17976931348623157e292"}, {"5e-324", "5e-324"},
		{"123456789012345678901234567890123456789012345", "123456789012345678901234567890123456789012345e0"},
	} {
		if got := spell(t, tc.raw); got != tc.want {
			t.Errorf("AppendNumber(%q) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}

// The spelling inside the box is big.Rat's, which match keys of earlier
// releases hash.
func TestNumberSpellingKeepsRatString(t *testing.T) {
	for _, raw := range []string{"0.1", "2.5e-3", "-17.25", "99.999", "1e19", "123456789.123456789", "6.02214076e23", "1234567890123456789012345678901234567890"} {
		var r big.Rat
		if _, ok := r.SetString(raw); !ok {
			t.Fatal(raw)
		}
		if got := spell(t, raw); got != r.RatString() {
			t.Errorf("AppendNumber(%q) = %q, want big.Rat's %q", raw, got, r.RatString())
		}
	}
}

func TestNumberRange(t *testing.T) {
	for _, raw := range []string{"1e1000001", "-1e1000001", "1e-1000001", "0.1e-1000000", "1e99999999999999999999", "12e1000000"} {
		if _, err := jsonvalue.AppendNumber(nil, raw); !errors.Is(err, jsonvalue.ErrNumberRange) {
			t.Errorf("AppendNumber(%q) error = %v, want ErrNumberRange", raw, err)
		}
	}
	for _, raw := range []string{"1e1000000", "9.9e1000000", "1e-1000000", "0.1e-999999", "12e999999", "0." + strings.Repeat("0", 999_999) + "1"} {
		if _, err := jsonvalue.AppendNumber(nil, raw); err != nil {
			t.Errorf("AppendNumber(%.20q…): %v, want it in range", raw, err)
		}
	}
	_, err := jsonvalue.Canonical([]byte(`{"a":[1,{"b":2e9999999}]}`))
	if !errors.Is(err, jsonvalue.ErrNumberRange) || !strings.HasPrefix(err.Error(), "a.1.b: number 2e9999999: ") {
		t.Errorf("Canonical error = %v, want ErrNumberRange at a.1.b", err)
	}
}

// FuzzNumber checks the number spelling on two numbers: equal spellings
// exactly for equal values (checked with big.Rat where that is cheap), a
// spelling that is its own spelling, at most 32 characters longer than the
// number, and each number spelled within a second: a slow input is a
// failure, not only a panic.
func FuzzNumber(f *testing.F) {
	for _, s := range []string{"0", "-0", "1", "1.0", "1e0", "0.7", "7e-1", "1e1000000", "1e1000001", "-12.5E-3", "0.30000000000000004",
		"1.7976931348623157e308", "5e-324", "100000000000000000000", "1e20", "12345678901234567890123", "01", "1.", ".5", "1e", "--1", "1e+0009"} {
		f.Add(s, "1")
		f.Add(s, s+"0")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		spellings := [2]string{}
		for i, raw := range [2]string{a, b} {
			start := time.Now()
			out, err := jsonvalue.AppendNumber(nil, raw)
			if d := time.Since(start); d > time.Second {
				t.Fatalf("AppendNumber(%.40q…) took %v", raw, d)
			}
			if err != nil {
				if !errors.Is(err, jsonvalue.ErrNumberRange) {
					t.Fatalf("AppendNumber(%q) error %v is not ErrNumberRange", raw, err)
				}
				return
			}
			if len(out) > len(raw)+32 {
				t.Fatalf("AppendNumber(%q) = %q: longer than the number by %d", raw, out, len(out)-len(raw))
			}
			if !strings.Contains(string(out), "/") {
				if again := spell(t, string(out)); again != string(out) {
					t.Fatalf("AppendNumber(%q) = %q, whose spelling is %q", raw, out, again)
				}
			}
			spellings[i] = string(out)
		}
		ra, oka := smallRat(a)
		rb, okb := smallRat(b)
		if oka && okb && (ra.Cmp(rb) == 0) != (spellings[0] == spellings[1]) {
			t.Fatalf("%q and %q: values equal %v, spelled %q and %q", a, b, ra.Cmp(rb) == 0, spellings[0], spellings[1])
		}
	})
}

// smallRat parses a JSON number whose value big.Rat handles quickly.
func smallRat(raw string) (*big.Rat, bool) {
	if len(raw) > 64 || !jsonNumber(raw) {
		return nil, false
	}
	if i := strings.IndexAny(raw, "eE"); i >= 0 && len(strings.TrimLeft(strings.TrimLeft(raw[i+1:], "+-"), "0")) > 3 {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(raw)
	return r, ok
}

// jsonNumber reports whether s follows the JSON number grammar.
func jsonNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	digits := func() int {
		n := 0
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		s = s[n:]
		return n
	}
	if len(s) > 1 && s[0] == '0' && s[1] >= '0' && s[1] <= '9' {
		return false
	}
	if digits() == 0 {
		return false
	}
	if strings.HasPrefix(s, ".") {
		s = s[1:]
		if digits() == 0 {
			return false
		}
	}
	if s != "" && (s[0] == 'e' || s[0] == 'E') {
		s = strings.TrimLeft(s[1:], "+-")
		if digits() == 0 {
			return false
		}
	}
	return s == ""
}
