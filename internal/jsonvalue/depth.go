package jsonvalue

// NestedDeeper reports whether b opens more than limit arrays and objects
// inside one another. It reads each byte once, skips strings, and stops at
// the first level over the limit; b need not be valid JSON.
func NestedDeeper(b []byte, limit int) bool {
	d, _ := Depth(b, limit)
	return d > limit
}

// Depth returns the deepest nesting of arrays and objects in b (ignoring
// brackets inside strings), stopping as soon as it exceeds limit, and the
// offset where it stopped. b need not be valid JSON.
func Depth(b []byte, limit int) (deepest, at int) {
	d := 0
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
		case '[', '{':
			d++
			if d > deepest {
				deepest = d
				if d > limit {
					return d, i
				}
			}
		case ']', '}':
			d--
		}
	}
	return deepest, len(b)
}
