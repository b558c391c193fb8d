package match

import "errors"

var (
	// ErrMalformedJSON means a body declared or known to be JSON does not parse.
	ErrMalformedJSON = errors.New("malformed JSON body")
	// ErrBadRule means an ignore or header rule cannot be used.
	ErrBadRule = errors.New("bad match rule")
)
