package store

import (
	"os"
	"syscall"
)

// startWriteback starts writing the dirty pages of the file at path to
// disk and does not wait for them (sync_file_range), so that a later flush
// finds most of them written. A failure is left to that flush to report.
func startWriteback(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	_ = syscall.SyncFileRange(int(f.Fd()), 0, 0, 0x2 /* SYNC_FILE_RANGE_WRITE */)
	f.Close()
}
