//go:build race

package wire

// raceEnabled reports whether the tests run under the race detector, which
// changes what allocates (and under which sync.Pool drops what it is given
// at random).
const raceEnabled = true
