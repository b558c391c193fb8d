// Package jsonvalue is llmproxy's one notion of JSON value equality: a
// canonical form that two documents share exactly when they are equal as
// values, and the paths at which two documents differ. Matching builds its
// keys and explains its misses with it; fixture checks compare tool results
// with it.
//
// # Rules
//
//   - Key order, whitespace, string escapes and number spelling do not
//     matter: {"a": 1.0, "b":2} equals {"b":2,"a":1}, and "\u00e9" equals
//     "é". Array order, types and every other value do.
//   - A member name given more than once keeps all its values, in order.
//   - Numbers are compared by their exact decimal value (0.1 is not
//     0.1000000000000000055511151231257827), never through float64. The
//     canonical spelling of a number costs time linear in its length and is
//     at most a few characters longer than its shortest spelling; a number
//     whose magnitude is beyond 10^±MaxExponent is refused with an error
//     wrapping ErrNumberRange.
//   - Ignore rules remove paths from the canonical form and from the
//     differences.
//
// The canonical form is what a match key hashes: it is stable across
// releases (see Number), and it is not always JSON, since a fraction is
// spelled p/q. Two paths compute it, with the same bytes: AppendCanonical
// walks a document parsed with gjson, and AppendCanonicalBytes reads an
// object or array in one pass over its bytes, the path every request
// takes unless it is refused (then the parsed path says why). The package keeps no state; everything in it is safe for
// concurrent use.
package jsonvalue
