package match

// MaxDepth bounds the nesting of a JSON body that is compared structurally.
// Canonicalising costs the body's size times its depth, and the JSON
// validator recurses once per level: without a bound, a few hundred
// kilobytes of brackets hold a request for minutes, and a body of 30 MiB of
// them overflows the goroutine stack, which ends the process.
const MaxDepth = 128

// deeper reports whether b opens more than limit arrays and objects inside
// one another. It reads each byte once, skips strings, and stops at the
// first level over the limit; b need not be valid JSON.
func deeper(b []byte, limit int) bool {
	depth := 0
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > limit {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}
