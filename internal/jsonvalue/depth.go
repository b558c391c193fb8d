package jsonvalue

import "bytes"

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
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			end := stringEnd(b, i+1)
			if end < 0 {
				return deepest, len(b)
			}
			i = end
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

// stringEnd returns the offset of the quote that ends the string whose
// content starts at from, or -1 when none does: the first quote after an
// even run of backslashes (each escapes the byte after it). A short string
// (most keys and values) is read byte by byte; past its first 16 bytes,
// quotes are found with bytes.IndexByte, so that a long one costs a
// fraction of a byte-by-byte scan.
func stringEnd(b []byte, from int) int {
	for end := min(from+16, len(b)); from < end; from++ {
		switch b[from] {
		case '"':
			return from
		case '\\':
			from++
		}
	}
	for from < len(b) {
		j := bytes.IndexByte(b[from:], '"')
		if j < 0 {
			return -1
		}
		q := from + j
		k := q
		for k > from && b[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q
		}
		from = q + 1
	}
	return -1
}
