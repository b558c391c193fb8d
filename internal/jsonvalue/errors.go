package jsonvalue

import "errors"

var (
	// ErrNumberRange means a number's magnitude is beyond 10^±MaxExponent.
	ErrNumberRange = errors.New("JSON number out of range")
	// ErrTooDeep means a document nests arrays and objects deeper than
	// MaxDepth.
	ErrTooDeep = errors.New("JSON nested too deeply")
	// ErrMalformed means a document is not one JSON value.
	ErrMalformed = errors.New("malformed JSON")
)
