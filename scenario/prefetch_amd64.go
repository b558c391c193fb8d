package scenario

import "unsafe"

// prefetch asks the processor to bring the cache line at p in, and
// returns at once: unlike a load, it does not hold back the work after it
// until the line arrives. p is not read and may be any address.
//
//go:noescape
func prefetch(p unsafe.Pointer)
