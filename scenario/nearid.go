package scenario

import "hash/maphash"

// nearIDs finds the step id that an id naming no step is a slip of: one
// character added, dropped or changed, or two neighbours swapped. It indexes
// every id and every id with one character dropped (two such slips share one
// of these), so that a file with many bad thens is checked in linear time
// rather than comparing each with every id. The index is built on the first
// look-up.
type nearIDs struct {
	ids   []string // the step ids, in file order
	seed  maphash.Seed
	index map[uint64][]int // hash of a variant → steps having it
}

// maxNearCandidates bounds the steps compared for one variant, so that ids
// sharing a variant by the thousand (s1, s2, …) cost no more than a few.
const maxNearCandidates = 8

// find returns the step whose id is the closest slip of id (the first in file
// order among equals), or -1.
func (n *nearIDs) find(id string) int {
	if len(id) > 64 {
		return -1
	}
	if n.index == nil {
		n.build()
	}
	best, bestDist := -1, 3
	n.variants(id, func(h uint64) {
		cands := n.index[h]
		for _, j := range cands[:min(len(cands), maxNearCandidates)] {
			if dist := editDistance(id, n.ids[j], bestDist); dist < bestDist || dist == bestDist && j < best {
				best, bestDist = j, dist
			}
		}
	})
	return best
}

func (n *nearIDs) build() {
	n.seed = maphash.MakeSeed()
	n.index = map[uint64][]int{}
	for j, id := range n.ids {
		if len(id) > 64 {
			continue
		}
		n.variants(id, func(h uint64) {
			if c := n.index[h]; len(c) == 0 || c[len(c)-1] != j {
				n.index[h] = append(c, j)
			}
		})
	}
}

// variants calls f with the hash of id and of id with each of its bytes
// dropped in turn.
func (n *nearIDs) variants(id string, f func(uint64)) {
	var h maphash.Hash
	h.SetSeed(n.seed)
	h.WriteString(id)
	f(h.Sum64())
	for k := range len(id) {
		h.Reset()
		h.WriteString(id[:k])
		h.WriteString(id[k+1:])
		f(h.Sum64())
	}
}
