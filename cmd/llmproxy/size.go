package main

import (
	"errors"
	"flag"
	"fmt"
	"math/big"
	"strings"
)

// A size flag (--max-body, --max-body-total, --max-response) takes a number
// of bytes, plain or with a unit: B; KB, MB, GB, decimal, powers of 1000 as
// their SI prefixes say; KiB, MiB, GiB, binary, powers of 1024. A unit's
// letters may be in any case (there are no bit units to tell apart), and
// one space may stand between the number and the unit. A fraction is taken
// when it makes a whole number of bytes (1.5MiB, 0.5KB; not 0.1KiB).

// sizeUnits are the units a size may carry, by their name in lower case.
var sizeUnits = map[string]int64{
	"b": 1, "kb": 1000, "mb": 1000 * 1000, "gb": 1000 * 1000 * 1000,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
}

// printUnits are the units a size prints in, the largest first, binary
// before decimal.
var printUnits = []struct {
	name string
	n    int64
}{{"GiB", 1 << 30}, {"GB", 1000 * 1000 * 1000}, {"MiB", 1 << 20}, {"MB", 1000 * 1000}, {"KiB", 1 << 10}, {"KB", 1000}}

// sizeSyntax is the help a refused size gets.
const sizeSyntax = "want bytes, or a number with a unit: B, KB, MB, GB (powers of 1000), KiB, MiB, GiB (powers of 1024), e.g. 32MiB"

// parseSize reads a size (see above). An error says what is wrong with it.
func parseSize(s string) (int64, error) {
	if s == "" {
		return 0, errors.New("empty size; " + sizeSyntax)
	}
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("%q is negative; %s", s, sizeSyntax)
	}
	end := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if end >= 0 {
		num, unit = s[:end], strings.TrimPrefix(s[end:], " ")
	}
	whole, frac, hasFrac := strings.Cut(num, ".")
	if whole == "" && frac == "" || strings.Contains(frac, ".") || hasFrac && frac == "" {
		return 0, fmt.Errorf("%q is not a number; %s", s, sizeSyntax)
	}
	if whole == "" {
		whole = "0"
	}
	mult := int64(1)
	if unit != "" {
		m, ok := sizeUnits[strings.ToLower(unit)]
		if !ok {
			return 0, fmt.Errorf("%q has a unit llmproxy does not know (%q); %s", s, unit, sizeSyntax)
		}
		mult = m
	}
	// Exact arithmetic: the number times the unit, which must be whole
	// and fit in an int64.
	r, ok := new(big.Rat).SetString(whole + "." + frac + "0")
	if !ok {
		return 0, fmt.Errorf("%q is not a number; %s", s, sizeSyntax)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if !r.IsInt() {
		return 0, fmt.Errorf("%q is not a whole number of bytes; %s", s, sizeSyntax)
	}
	if !r.Num().IsInt64() {
		return 0, fmt.Errorf("%q is too large (at most 8EiB - 1 byte, 9223372036854775807)", s)
	}
	return r.Num().Int64(), nil
}

// formatSize writes n in the largest unit it is a whole number of, binary
// before decimal (32MiB, 1KB), else in bytes (1001B); zero is "0".
func formatSize(n int64) string {
	if n == 0 {
		return "0"
	}
	for _, u := range printUnits {
		if n%u.n == 0 {
			return fmt.Sprintf("%d%s", n/u.n, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// sizeValue is a size flag: a flag.Value over an int64 of bytes, parsed by
// parseSize and printed by formatSize, so that the help shows a default as
// 32MiB.
type sizeValue struct{ p *int64 }

func (v sizeValue) String() string {
	if v.p == nil {
		return "0"
	}
	return formatSize(*v.p)
}

func (v sizeValue) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}

// sizeVar defines a size flag on fs: p holds the bytes, def the default.
func sizeVar(fs *flag.FlagSet, p *int64, name string, def int64, usage string) {
	*p = def
	fs.Var(sizeValue{p}, name, usage)
}
