package cassette

import "errors"

var (
	// ErrBadExport means an export file does not parse or breaks a rule of the format.
	ErrBadExport = errors.New("bad cassette export")
	// ErrBadRecord means a stored interaction does not read as the format
	// its cassette was written in: the file was damaged or written by
	// something else.
	ErrBadRecord = errors.New("damaged interaction record")
	// ErrIncomplete means an interaction lacks what it needs to be stored.
	ErrIncomplete = errors.New("incomplete interaction")
	// ErrNoInteraction means an interaction id the cassette does not hold.
	ErrNoInteraction = errors.New("no such interaction")
)
