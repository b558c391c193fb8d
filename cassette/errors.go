package cassette

import "errors"

var (
	// ErrBadExport means an export file does not parse or breaks a rule of the format.
	ErrBadExport = errors.New("bad cassette export")
	// ErrIncomplete means an interaction lacks what it needs to be stored.
	ErrIncomplete = errors.New("incomplete interaction")
)
