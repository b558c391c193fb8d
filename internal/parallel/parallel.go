// Package parallel runs one function over the indexes of a slice on every
// CPU at once.
package parallel

import (
	"runtime"
	"sync"
)

// minPerWorker is the fewest items worth a goroutine of their own.
const minPerWorker = 256

// Each calls fn for every k in [0, n), on up to GOMAXPROCS goroutines, each
// taking every w-th index in order and stopping at its first error. It
// returns the error of the lowest index that failed, and that index; -1
// and nil when none did. fn must be safe for concurrent use on distinct
// indexes.
func Each(n int, fn func(k int) error) (int, error) {
	workers := min(runtime.GOMAXPROCS(0), max(1, n/minPerWorker))
	failed := make([]int, workers) // the index that failed, or -1
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		failed[w] = -1
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := w; k < n; k += workers {
				if err := fn(k); err != nil {
					failed[w], errs[w] = k, err
					return
				}
			}
		}()
	}
	wg.Wait()
	first := -1
	for w, k := range failed {
		if k >= 0 && (first < 0 || k < failed[first]) {
			first = w
		}
	}
	if first < 0 {
		return -1, nil
	}
	return failed[first], errs[first]
}
