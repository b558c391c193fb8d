package jsonschemagen

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"
)

// fromPattern makes a string that the RE2 pattern matches: the first
// alternative of each choice, the fewest repeats; if that is shorter than
// minLength, the optional repeats are taken minLength times instead.
func fromPattern(pattern string, minLength int) (string, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", fmt.Errorf("%w: pattern %q is not RE2: %v", ErrUnsupported, pattern, err)
	}
	re = re.Simplify()
	var s string
	for _, extra := range []int{0, minLength} {
		w := &patternWriter{extra: extra}
		if err := w.write(re); err != nil {
			return "", fmt.Errorf("pattern %q: %w", pattern, err)
		}
		if s = string(w.out); utf8.RuneCountInString(s) >= minLength {
			break
		}
	}
	if ok, _ := regexp.MatchString(pattern, s); !ok {
		return "", fmt.Errorf("%w: no string made matches pattern %q (word boundaries or anchors in the middle?)", ErrUnsupported, pattern)
	}
	return s, nil
}

// patternWriter writes a string a regular expression matches.
type patternWriter struct {
	out   []rune
	extra int // times an unbounded repeat is taken beyond its minimum
}

func (w *patternWriter) write(re *syntax.Regexp) error {
	if len(w.out) > MaxString {
		return fmt.Errorf("%w: the string made is longer than %d", ErrTooLarge, MaxString)
	}
	switch re.Op {
	case syntax.OpNoMatch:
		return fmt.Errorf("%w: it matches nothing", ErrUnsatisfiable)
	case syntax.OpLiteral:
		w.out = append(w.out, re.Rune...)
	case syntax.OpCharClass:
		r, ok := classRune(re.Rune)
		if !ok {
			return fmt.Errorf("%w: an empty character class", ErrUnsatisfiable)
		}
		w.out = append(w.out, r)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		w.out = append(w.out, 'a')
	case syntax.OpCapture:
		return w.write(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		n := repeats(re, w.extra)
		for range n {
			if err := w.write(re.Sub[0]); err != nil {
				return err
			}
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if err := w.write(s); err != nil {
				return err
			}
		}
	case syntax.OpAlternate:
		return w.write(re.Sub[0])
	}
	return nil // empty match, anchors, boundaries: nothing to write
}

// repeats is how many times a repeat is taken: its minimum, or with extra,
// up to extra more within its maximum.
func repeats(re *syntax.Regexp, extra int) int {
	lo, hi := 0, -1
	switch re.Op {
	case syntax.OpPlus:
		lo = 1
	case syntax.OpQuest:
		hi = 1
	case syntax.OpRepeat:
		lo, hi = re.Min, re.Max
	}
	n := lo + extra
	if hi >= 0 && n > hi {
		n = hi
	}
	return n
}

// classRune picks a rune of a class (pairs of ranges): a letter or digit
// when the class has one, else its first printable rune, else its first.
func classRune(ranges []rune) (rune, bool) {
	if len(ranges) < 2 {
		return 0, false
	}
	in := func(r rune) bool {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= r && r <= ranges[i+1] {
				return true
			}
		}
		return false
	}
	for _, r := range []rune{'a', 'A', '0'} {
		if in(r) {
			return r, true
		}
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		if ranges[i+1] >= '!' {
			return max(ranges[i], '!'), true
		}
	}
	return ranges[0], true
}
