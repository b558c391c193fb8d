package store

import "syscall"

// mapsFiles: the page walk reads the file through a window (see window).
const mapsFiles = true

// mapFile maps n bytes of the file fd at off (a multiple of the system's
// page size) read-only.
func mapFile(fd uintptr, off int64, n int) ([]byte, error) {
	return syscall.Mmap(int(fd), off, n, syscall.PROT_READ, syscall.MAP_SHARED)
}

// unmapFile ends a map of mapFile.
func unmapFile(b []byte) error { return syscall.Munmap(b) }
