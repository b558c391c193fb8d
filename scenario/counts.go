package scenario

import "sync"

// stepCounts counts events by step. add logs the step, and the log is
// added into the counts a batch at a time: with many steps, an answer's
// count lies where nothing else the answer read brought memory in, and
// one read from memory at the end of every answer costs about what
// finding the step does; added a batch at a time, those reads are made
// together.
type stepCounts struct {
	mu  sync.Mutex
	n   []int
	log []int32 // the steps added since the counts were last brought up to date
}

// countBatch is how many steps stepCounts logs before it adds them into
// the counts.
const countBatch = 256

func newStepCounts(steps int) stepCounts {
	return stepCounts{n: make([]int, steps), log: make([]int32, 0, countBatch)}
}

// add counts one event of step.
func (c *stepCounts) add(step int) {
	c.mu.Lock()
	c.log = append(c.log, int32(step))
	if len(c.log) == cap(c.log) {
		c.fold()
	}
	c.mu.Unlock()
}

// all returns the counts by step, up to date; c.mu is held, and the
// counts are valid until it is released.
func (c *stepCounts) all() []int {
	c.fold()
	return c.n
}

// fold adds the logged steps into the counts. c.mu is held.
func (c *stepCounts) fold() {
	for _, s := range c.log {
		c.n[s]++
	}
	c.log = c.log[:0]
}
