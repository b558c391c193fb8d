//go:build !linux

package store

import "errors"

// dropPages is not done where the system's madvise is not known to keep a
// shared file map's contents: the kernel drops clean pages under pressure.
func dropPages(uintptr, int64) error { return errors.ErrUnsupported }
