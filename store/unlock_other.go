//go:build !unix

package store

import "os"

// unlock is a no-op where bbolt does not lock with flock.
func unlock(*os.File) {}
