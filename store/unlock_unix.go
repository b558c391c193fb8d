//go:build unix

package store

import (
	"os"
	"syscall"
)

// unlock drops the file lock bbolt took on f. Closing f alone would not:
// the memory map bbolt made of the file holds the same open file.
func unlock(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
