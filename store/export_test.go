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
	return walkPages(f)
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
