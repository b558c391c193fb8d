package store

import (
	"os"
	"time"
)

// SetPageWalkForBenchmark turns the page walk in Open on or off, and
// returns a function that restores the previous setting. Only the
// benchmark that measures the walk's cost uses it; it must not run
// alongside Opens.
func SetPageWalkForBenchmark(on bool) (restore func()) {
	prev := skipPageWalk
	skipPageWalk = !on
	return func() { skipPageWalk = prev }
}

// WalkPages runs the page walk alone on the file at path.
func WalkPages(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = walkPages(f, false)
	return err
}

// ValueTableBytes is, for a store that reads its values with pread, the
// memory its table of their places holds, and -1 for one that reads them
// through the map.
func (s *Store) ValueTableBytes() int {
	if s.values == nil {
		return -1
	}
	return 8*cap(s.values.off) + 4*cap(s.values.n)
}

// WalkAfterOpenForTest makes Open run the page walk after bolt.Open, as it
// does where bbolt's lock cannot be taken first, and returns a function
// that restores the default.
func WalkAfterOpenForTest() (restore func()) {
	lockFirst = func(*os.File, bool, time.Duration) (bool, error) { return false, nil }
	return func() { lockFirst = lockFile }
}

// ResidentDrops is how many times the store has dropped its map's pages.
func (s *Store) ResidentDrops() int64 { return s.res.drops.Load() }

// ValuePageBytes is, for a store that reads its values with pread, the size
// of the interactions bucket's pages (0 when the bucket is inline), and -1
// for one that reads them through the map.
func (s *Store) ValuePageBytes() int64 {
	if s.values == nil {
		return -1
	}
	return s.values.pageBytes
}
