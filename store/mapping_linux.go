package store

import "syscall"

// dropPages drops the pages of size bytes of a read-only file map at addr
// from the process (MADV_DONTNEED): the next read of one faults it in
// again from the page cache.
func dropPages(addr uintptr, size int64) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, addr, uintptr(size), syscall.MADV_DONTNEED); errno != 0 {
		return errno
	}
	return nil
}
