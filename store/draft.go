package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// CreateTemp creates an empty file for a new version of the cassette at
// path, under a unique name ".NAME.tmp-*" in path's directory (so that
// renaming it over path stays on one file system), and returns its name.
func CreateTemp(path string) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// SyncDir flushes a directory's entries, so that a rename in it survives
// a crash, where the system allows it (Windows cannot open a directory for
// that, and orders renames itself).
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}

// upgradeFile rewrites a cassette of an older format version in the
// current one, as Options.Upgrade converts its records, the way a
// migration does: into a new file beside it, written in batches (see
// CopyTo), flushed, and renamed over the path, so that memory stays
// bounded and a crash leaves the old file or the whole new one. The new
// file is opened, and its lock taken, before the rename, and the store
// goes on with it: no other process can take the cassette between. The old
// file's handle is closed with the store, after any read begun on it.
// The caller holds appendMu.
func (s *Store) upgradeFile() error {
	if s.current {
		return nil
	}
	if m, err := s.Meta(); err != nil || m.FormatVersion >= FormatVersion {
		s.current = err == nil
		return err
	}
	s.swapMu.Lock() // no other write to the old file from now on
	defer s.swapMu.Unlock()
	m, err := s.Meta() // a Replace may have rewritten it meanwhile
	if err != nil || m.FormatVersion >= FormatVersion {
		s.current = err == nil
		return err
	}
	if s.upgrade == nil {
		return fmt.Errorf("cassette %s: format version %d, this store appends only to %d: %w", s.path, m.FormatVersion, FormatVersion, ErrFormatVersion)
	}
	tmp, err := CreateTemp(s.path)
	if err != nil {
		return fmt.Errorf("cassette %s: upgrade from format version %d: %w", s.path, m.FormatVersion, err)
	}
	d, err := Open(tmp, &Options{Now: s.now})
	if err == nil {
		if err = s.CopyTo(d, s.upgrade, 0); err == nil {
			err = os.Rename(tmp, s.path)
		}
		if err != nil {
			d.Close()
		}
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cassette %s: upgrade from format version %d: %w", s.path, m.FormatVersion, err)
	}
	s.retired = s.db.Swap(d.db.Load())
	s.current = true
	if err := SyncDir(filepath.Dir(s.path)); err != nil {
		return fmt.Errorf("cassette %s: %w", s.path, err)
	}
	return nil
}
