//go:build !windows && !plan9 && !solaris && !aix && !android

package store

import (
	"os"
	"syscall"
	"time"

	berrors "go.etcd.io/bbolt/errors"
)

// lockFile takes the lock bbolt is about to take on f — flock, exclusive
// for a writer, shared for a reader — waiting up to timeout (zero: for
// ever) as bbolt's flock does, so that the file can be checked before
// bbolt reads it. bbolt's own flock on the same open file then succeeds at
// once: flock locks belong to the open file, and taking one again in the
// same mode is a no-op. It reports false where bbolt locks otherwise.
func lockFile(f *os.File, exclusive bool, timeout time.Duration) (bool, error) {
	flag := syscall.LOCK_NB | syscall.LOCK_SH
	if exclusive {
		flag = syscall.LOCK_NB | syscall.LOCK_EX
	}
	const retry = 50 * time.Millisecond // bbolt's flockRetryTimeout
	start := time.Now()
	for {
		err := syscall.Flock(int(f.Fd()), flag)
		if err == nil {
			return true, nil
		}
		if err != syscall.EWOULDBLOCK {
			return false, err
		}
		if timeout != 0 && time.Since(start) > timeout-retry {
			return false, berrors.ErrTimeout
		}
		time.Sleep(retry)
	}
}
