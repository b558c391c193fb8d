package match

import "errors"

var (
	// ErrMalformedJSON means a body declared or known to be JSON does not parse.
	ErrMalformedJSON = errors.New("malformed JSON body")
	// ErrTooDeep means a body declared or known to be JSON nests arrays and
	// objects deeper than MaxDepth.
	ErrTooDeep = errors.New("JSON body nested too deeply")
	// ErrBadRule means an ignore or header rule, or a rules file, cannot be
	// used.
	ErrBadRule = errors.New("bad match rule")
)
