package store

import (
	"fmt"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// callbackPanic carries a panic raised by a caller's function out through
// guard, which must not report it as a damaged file.
type callbackPanic struct{ v any }

// guard runs fn, which reads or writes the bbolt file, and turns a panic
// inside bbolt — its answer to a corrupt page — into an error wrapping
// ErrCorrupt that names the file and the operation. bbolt rolls the
// transaction back as the panic passes, so nothing is written.
func (s *Store) guard(op string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if cp, ok := r.(callbackPanic); ok {
				panic(cp.v)
			}
			err = fmt.Errorf("cassette %s: %s: %v: %w", s.path, op, r, ErrCorrupt)
		}
	}()
	return fn()
}

// view runs a read transaction under guard.
func (s *Store) view(op string, fn func(tx *bolt.Tx) error) error {
	return s.guard(op, func() error { return s.db.Load().View(fn) })
}

// callback runs a caller's function inside a transaction, marking its panic
// as the caller's own.
func callback(fn func() error) error {
	defer func() {
		if r := recover(); r != nil {
			panic(callbackPanic{r})
		}
	}()
	return fn()
}

func (s *Store) update(fn func(tx *bolt.Tx) error) error {
	if s.readOnly {
		return fmt.Errorf("cassette %s: %w", s.path, ErrReadOnly)
	}
	s.swapMu.RLock()
	defer s.swapMu.RUnlock()
	return s.guard("write", func() error {
		if err := s.db.Load().Update(fn); err != nil {
			return fmt.Errorf("cassette %s: %w", s.path, err)
		}
		return nil
	})
}
