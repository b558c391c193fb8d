package jsonvalue

import (
	"math/big"
	"math/bits"
	"strconv"
	"strings"
)

// MaxExponent bounds the numbers the package compares: a number whose value,
// written d.ddd×10^n, has |n| > MaxExponent is refused with ErrNumberRange.
// No JSON library reads such a number as anything but an infinity or zero,
// and the bound keeps the arithmetic on exponents exact.
const MaxExponent = 1_000_000

// The box within which a number keeps the spelling earlier releases gave it
// (see AppendNumber): significant digits, exponent, and how much longer than
// the exponent form that spelling may be.
const (
	ratDigits = 40
	ratExp    = 60
	ratSlack  = 16
)

// decimal is a number as sign × digits × 10^exp, where digits, the
// concatenation of hi and lo, has no leading or trailing zero ("" for zero).
type decimal struct {
	neg    bool
	hi, lo string
	exp    int
}

func (d decimal) digits() int { return len(d.hi) + len(d.lo) }

// AppendNumber appends to b the canonical spelling of the JSON number raw.
// Two numbers have the same spelling exactly when their values are equal:
// 1, 1.0, 1e0 and 10e-1 are all "1".
//
// The spelling is chosen by the value alone. A number with at most 40
// significant digits and a decimal exponent within ±60 is spelled as
// big.Rat.RatString spells it (an integer in plain decimal, "100" for 1e2;
// any other number as a reduced fraction, "7/10" for 0.7), the spelling the
// match keys of earlier releases hash, as long as that is at most 16
// characters longer than the exponent form. Every other number takes the
// exponent form: its significant digits as an integer, "e", and the
// exponent ("1e1000000", "30000000000000004e-37"). Either way the work and
// the spelling are linear in the length of raw.
//
// A number whose magnitude is beyond 10^±MaxExponent is an error wrapping
// ErrNumberRange (zero is zero whatever its exponent). Text that is not a
// JSON number is appended as it is.
func AppendNumber(b []byte, raw string) ([]byte, error) {
	if plainShortInt(raw) {
		if raw == "-0" {
			return append(b, '0'), nil
		}
		return append(b, raw...), nil
	}
	d, ok, err := parseNumber(raw)
	switch {
	case err != nil:
		return b, err
	case !ok:
		return append(b, raw...), nil
	case d.digits() == 0:
		return append(b, '0'), nil
	}
	expLen := d.digits() + 1 + intLen(d.exp)
	if d.neg {
		expLen++
	}
	if d.digits() <= ratDigits && d.exp >= -ratExp && d.exp <= ratExp {
		start := len(b)
		b = appendRat(b, d)
		if len(b)-start <= expLen+ratSlack {
			return b, nil
		}
		b = b[:start]
	}
	if d.neg {
		b = append(b, '-')
	}
	b = append(b, d.hi...)
	b = append(b, d.lo...)
	b = append(b, 'e')
	return strconv.AppendInt(b, int64(d.exp), 10), nil
}

// plainShortInt reports whether raw is an integer of at most 20 digits
// written without fraction or exponent, which is its own spelling.
func plainShortInt(raw string) bool {
	s := strings.TrimPrefix(raw, "-")
	if s == "" || len(s) > 20 || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseNumber reads a JSON number. ok is false when raw is not one; err
// wraps ErrNumberRange when its magnitude is out of bounds.
func parseNumber(raw string) (d decimal, ok bool, err error) {
	s := raw
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	}
	intPart, s := leadingDigits(s)
	if intPart == "" {
		return d, false, nil
	}
	var frac, expDigits string
	expNeg := false
	if strings.HasPrefix(s, ".") {
		if frac, s = leadingDigits(s[1:]); frac == "" {
			return d, false, nil
		}
	}
	if s != "" && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s != "" && (s[0] == '+' || s[0] == '-') {
			expNeg, s = s[0] == '-', s[1:]
		}
		if expDigits, s = leadingDigits(s); expDigits == "" {
			return d, false, nil
		}
	}
	if s != "" {
		return d, false, nil
	}
	// The significant digits are intPart then frac, without the zeros at
	// either end; the trailing ones move into the exponent.
	d.hi, d.lo = strings.TrimLeft(intPart, "0"), frac
	if d.hi == "" {
		d.lo = strings.TrimLeft(frac, "0")
	}
	trailing := len(d.lo)
	d.lo = strings.TrimRight(d.lo, "0")
	trailing -= len(d.lo)
	if d.lo == "" {
		n := len(d.hi)
		d.hi = strings.TrimRight(d.hi, "0")
		trailing += n - len(d.hi)
	}
	if d.digits() == 0 {
		return decimal{}, true, nil
	}
	expDigits = strings.TrimLeft(expDigits, "0")
	if len(expDigits) > 9 {
		return d, false, rangeError(raw)
	}
	e := 0
	for i := 0; i < len(expDigits); i++ {
		e = e*10 + int(expDigits[i]-'0')
	}
	if expNeg {
		e = -e
	}
	d.exp = e - len(frac) + trailing
	if mag := d.exp + d.digits() - 1; mag > MaxExponent || mag < -MaxExponent {
		return d, false, rangeError(raw)
	}
	return d, true, nil
}

// intLen is the length of n in decimal.
func intLen(n int) int {
	l := 1
	if n < 0 {
		l, n = 2, -n
	}
	for ; n >= 10; n /= 10 {
		l++
	}
	return l
}

func leadingDigits(s string) (digits, rest string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i], s[i:]
}

// numberError is a number out of range; the walk that met it adds where.
type numberError struct {
	raw  string
	path []string // innermost segment first
}

func rangeError(raw string) *numberError { return &numberError{raw: raw} }

func (e *numberError) Error() string {
	raw := e.raw
	if len(raw) > 24 {
		raw = raw[:23] + "…"
	}
	msg := "number " + raw + ": " + ErrNumberRange.Error() + " (its magnitude is beyond 10^±" + strconv.Itoa(MaxExponent) + ")"
	if len(e.path) == 0 {
		return msg
	}
	segs := make([]string, len(e.path))
	for i, s := range e.path {
		segs[len(segs)-1-i] = s
	}
	return Path(segs) + ": " + msg
}

func (e *numberError) Unwrap() error { return ErrNumberRange }

// pow10 holds the powers of ten that fit a uint64.
var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// appendRat appends d as big.Rat.RatString spells it; d is within the box
// of AppendNumber, so the arithmetic is small.
func appendRat(b []byte, d decimal) []byte {
	if d.neg {
		b = append(b, '-')
	}
	if d.exp >= 0 {
		b = append(b, d.hi...)
		b = append(b, d.lo...)
		for range d.exp {
			b = append(b, '0')
		}
		return b
	}
	k := -d.exp
	if d.digits() <= 19 && k <= 19 {
		var n uint64
		for _, part := range [2]string{d.hi, d.lo} {
			for i := 0; i < len(part); i++ {
				n = n*10 + uint64(part[i]-'0')
			}
		}
		n, den := reduced(n, k)
		b = strconv.AppendUint(b, n, 10)
		b = append(b, '/')
		return strconv.AppendUint(b, den, 10)
	}
	n, _ := new(big.Int).SetString(d.hi+d.lo, 10)
	den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil)
	return append(b, new(big.Rat).SetFrac(n, den).RatString()...)
}

// reduced is the fraction n/10^k in lowest terms, n > 0 and k <= 19:
// their greatest common divisor is a product of twos and fives, divided out
// by shifts and by divisions by a constant, which cost no division
// instruction.
func reduced(n uint64, k int) (num, den uint64) {
	den = pow10[k]
	twos := min(bits.TrailingZeros64(n), k)
	n, den = n>>twos, den>>twos
	for range k {
		if n%5 != 0 {
			break
		}
		n, den = n/5, den/5
	}
	return n, den
}
