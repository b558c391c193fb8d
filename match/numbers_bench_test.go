package match_test

import (
	"strings"
	"testing"
)

// hugeExponents is a 2 KB body of two hundred 1e1000000: each number costs
// what its spelling costs, not what its value would take to write out.
func hugeExponents() []byte {
	return []byte(`{"model":"m","x":[` + strings.TrimSuffix(strings.Repeat("1e1000000,", 200), ",") + `]}`)
}

// plainNumbers is a body of the same size and shape with ordinary numbers,
// the baseline the huge exponents are measured against.
func plainNumbers() []byte {
	return []byte(`{"model":"m","x":[` + strings.TrimSuffix(strings.Repeat("0.7000001,", 200), ",") + `]}`)
}

// BenchmarkKeyNumbers keys a body of two hundred 1e1000000 and, as its
// baseline in the same run, one of two hundred ordinary decimals: the ratio
// of the two is what a hostile number costs.
func BenchmarkKeyNumbers(b *testing.B) {
	m := benchMatchers(b)["no-rules"]
	for name, body := range map[string][]byte{"huge-exponents": hugeExponents(), "plain-decimals": plainNumbers()} {
		b.Run(name, func(b *testing.B) {
			r := benchRequest(body)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Key(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
