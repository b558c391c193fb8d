//go:build !linux

package store

import "errors"

// mapsFiles: the page walk reads the file with ReadAt.
const mapsFiles = false

// mapFile is not done where it is not known to be cheaper than reading:
// the walk reads the file.
func mapFile(uintptr, int64, int) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmapFile([]byte) error { return errors.ErrUnsupported }
