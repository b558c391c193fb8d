package match

import (
	"errors"

	"github.com/llmproxy/llmproxy/internal/jsonvalue"
)

var (
	// ErrMalformedJSON means a body declared or known to be JSON does not parse.
	ErrMalformedJSON = errors.New("malformed JSON body")
	// ErrTooDeep means a body declared or known to be JSON nests arrays and
	// objects deeper than MaxDepth.
	ErrTooDeep = jsonvalue.ErrTooDeep
	// ErrNumberRange means a JSON body holds a number whose magnitude is
	// beyond 10^±jsonvalue.MaxExponent (1e1000001, say): such a number
	// cannot be compared in bounded time and memory, so the request is
	// refused. The proxy answers it with a 400.
	ErrNumberRange = jsonvalue.ErrNumberRange
	// ErrBadRule means an ignore or header rule, or a rules file, cannot be
	// used.
	ErrBadRule = errors.New("bad match rule")
)
