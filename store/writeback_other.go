//go:build !linux

package store

// startWriteback does nothing where the system has no way to start a
// file's writeback without waiting for it: the last flush writes it all.
func startWriteback(string) {}
