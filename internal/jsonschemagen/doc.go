// Package jsonschemagen makes a deterministic, minimal JSON value for a JSON
// Schema (a scenario's json: {generate: true} answer): required properties
// only, minItems items, enums' and consts' first value, the smallest number
// in range, strings that honour format and (RE2) pattern, the first
// alternative of anyOf and oneOf that can be made.
//
// # Rules
//
//   - It never fetches: a $ref is a JSON Pointer into the schema itself
//     ("#/$defs/x"); any other is ErrUnsupported.
//   - It is bounded: values nest at most MaxDepth deep ($ref hops
//     included, so a cycle of required references ends in ErrTooDeep),
//     it visits at most MaxWork schema nodes (ErrTooLarge), and a string
//     has at most MaxString characters.
//   - It does not check its value against the schema: keywords it does not
//     read (not, if/then/else, uniqueItems, contains, dependent…) can make
//     it wrong, and so can a schema no value satisfies. Callers validate
//     the value and report what fails.
package jsonschemagen
