package store

import "errors"

var (
	// ErrLocked means another process holds the cassette open for writing.
	ErrLocked = errors.New("cassette is locked by another process")
	// ErrNotCassette means the file is not a bbolt file, or not an llmproxy cassette.
	ErrNotCassette = errors.New("not an llmproxy cassette")
	// ErrCorrupt means the file is a cassette whose pages are damaged: the
	// store's walk of the page tree or bbolt found a page it cannot read,
	// or the consistency checks at open failed.
	ErrCorrupt = errors.New("cassette file is damaged")
	// ErrFormatVersion means the cassette was written by a newer llmproxy.
	ErrFormatVersion = errors.New("unsupported cassette format version")
	// ErrNotFound means no interaction or fixture has the requested id.
	ErrNotFound = errors.New("not found")
	// ErrReadOnly means a write was attempted on a store opened read-only.
	ErrReadOnly = errors.New("cassette is open read-only")
	// ErrMissing means a read-only open found no file at the path.
	ErrMissing = errors.New("cassette does not exist")
)
