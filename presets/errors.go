package presets

import (
	"errors"
	"strings"
)

var (
	// ErrInvalidArguments means a call's arguments do not satisfy the preset's
	// argument schema.
	ErrInvalidArguments = errors.New("invalid tool arguments")
	// ErrInvalidResult means a tool result (a success, or the error envelope of
	// a failure) does not satisfy the preset's result or error schema.
	ErrInvalidResult = errors.New("invalid tool result")
	// ErrInvalidID means a call id is blank or longer than MaxIDLength, or a
	// fixture's result answers a different call than its own.
	ErrInvalidID = errors.New("invalid call id")
	// ErrDuplicateID means two calls in one turn share an id.
	ErrDuplicateID = errors.New("duplicate call id")
	// ErrUnknownPreset means no preset has the given function name.
	ErrUnknownPreset = errors.New("unknown preset")
	// ErrInvalidDelay means a fixture was given a negative delay.
	ErrInvalidDelay = errors.New("invalid fixture delay")
)

// Violation is one broken rule: where it is, which rule, and what was wrong.
type Violation struct {
	// Path is a JSON Pointer (RFC 6901) into the checked document; "" is the
	// document itself.
	Path string
	// Rule is the JSON Schema keyword that failed ("minimum", "required",
	// "additionalProperties", …), or one of the package's own rules: "json"
	// for a document that does not parse, "nonblank" and "maxLength" for call
	// ids, "unique" for ids repeated in one turn, "explicit" for a timestamp
	// left unset.
	Rule string
	// Message says what was wrong, for a person.
	Message string
}

func (v Violation) String() string {
	if v.Path == "" {
		return v.Message + " (" + v.Rule + ")"
	}
	return v.Path + ": " + v.Message + " (" + v.Rule + ")"
}

// ValidationError reports every rule a document broke. It wraps one of the
// package's sentinels, so callers branch with errors.Is and read the details
// with errors.As.
//
// Its message reads like
//
//	presets: web_search arguments: /limit: must be >= 1 (minimum)
type ValidationError struct {
	// Preset is the function name of the preset whose rules were applied.
	Preset string
	// Part names what was checked: "arguments", "result", "error" (the error
	// envelope), "call" (a call record), "turn" (the calls of one turn) or
	// "fixture".
	Part string
	// Violations are sorted by Path, then Rule. There is at least one.
	Violations []Violation

	sentinel error
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("presets: ")
	b.WriteString(e.Preset)
	b.WriteByte(' ')
	b.WriteString(e.Part)
	b.WriteString(": ")
	for i, v := range e.Violations {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(v.String())
	}
	return b.String()
}

// Unwrap returns the sentinel the error belongs to.
func (e *ValidationError) Unwrap() error { return e.sentinel }

func invalid(sentinel error, preset, part string, vs ...Violation) *ValidationError {
	return &ValidationError{Preset: preset, Part: part, Violations: vs, sentinel: sentinel}
}
