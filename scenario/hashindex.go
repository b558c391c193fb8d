package scenario

import (
	"hash/maphash"
	"math/bits"
)

// hashIndex files steps under a string key by 32 bits of the key's hash
// alone, so that a lookup reads one slot of 8 bytes (in a table of 12 to 24
// bytes a key) and, for a key filed with one step (the usual case), nothing
// else: the step is in the slot. With many steps, each lookup touches
// another key, and the memory it touches is what it costs.
// Keys whose hashes share those bits share a slot: a lookup may return a
// step filed under another key, and the caller checks each step it
// returns.
type hashIndex struct {
	seed  maphash.Seed
	slots []hashSlot // open addressing, linear probing; a power of two, under two thirds full
	// lists holds the steps of the slots that hold several: at a slot's
	// first, their number, then the steps in the order filed.
	lists []int
}

// hashSlot is the steps filed under one hash. ref is 0 for an empty slot;
// else 1 + the one step filed, or, with listed set, 1 + the index in lists
// of their number.
type hashSlot struct {
	hash uint32
	ref  uint32
}

// listed marks a slot whose steps are in lists.
const listed = 1 << 31

// newHashIndex returns an index of the steps filed under each key
// (stepOf[k] under keys[k]), in the order filed.
func newHashIndex(seed maphash.Seed, keys []string, stepOf []int) hashIndex {
	byHash := map[uint32][]int{}
	var order []uint32
	for k, key := range keys {
		h := uint32(maphash.String(seed, key))
		if _, ok := byHash[h]; !ok {
			order = append(order, h)
		}
		byHash[h] = append(byHash[h], stepOf[k])
	}
	size := 1 << bits.Len(uint(len(order)+len(order)/2))
	ix := hashIndex{seed: seed, slots: make([]hashSlot, size)}
	mask := uint32(size - 1)
	for _, h := range order {
		s := h & mask
		for ix.slots[s].ref != 0 {
			s = (s + 1) & mask
		}
		steps := byHash[h]
		if len(steps) == 1 && steps[0] < listed-1 {
			ix.slots[s] = hashSlot{hash: h, ref: uint32(steps[0]) + 1}
			continue
		}
		ix.slots[s] = hashSlot{hash: h, ref: uint32(len(ix.lists)+1) | listed}
		ix.lists = append(append(ix.lists, len(steps)), steps...)
	}
	return ix
}

// lookup returns the steps filed under a key with hash h (see hash), in
// the order filed; they may include steps filed under another key. A
// single step is returned in one, which the result then shares.
func (ix *hashIndex) lookup(h uint64, one *[1]int) []int {
	if len(ix.slots) == 0 {
		return nil
	}
	mask := uint32(len(ix.slots) - 1)
	for s := uint32(h) & mask; ; s = (s + 1) & mask {
		slot := ix.slots[s]
		if slot.ref == 0 {
			return nil
		}
		if slot.hash != uint32(h) {
			continue
		}
		if slot.ref&listed == 0 {
			one[0] = int(slot.ref - 1)
			return one[:]
		}
		from := int(slot.ref&^listed) - 1
		to := from + 1 + ix.lists[from]
		return ix.lists[from+1 : to : to]
	}
}

// hash returns the hash of key in ix.
func (ix *hashIndex) hash(key string) uint64 { return maphash.String(ix.seed, key) }
