//go:build !amd64

package scenario

import "unsafe"

// prefetch does nothing here; on amd64 it asks the processor to bring the
// cache line at p in (prefetch_amd64.go).
func prefetch(p unsafe.Pointer) {}
