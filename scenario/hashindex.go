package scenario

import (
	"hash/maphash"
	"math/bits"
	"unsafe"
)

// hashIndex files steps under a string key by a fingerprint of the key's
// hash, in slots of 4 bytes, so that a lookup reads one slot and, for a key
// filed with one step (the usual case), nothing else: the step is in the
// slot. With many steps each lookup touches another key, and the memory it
// touches is what it costs: 10 000 keys take 64 KB (in slots of a 32-bit
// hash and a step, 128 KB).
// Keys whose fingerprints meet on a probe share a slot: a lookup may
// return steps filed under another key, and the caller checks each step it
// returns.
type hashIndex struct {
	seed maphash.Seed
	// slots is a table by open addressing and linear probing (a power of
	// two, under two thirds full) of fingerprint<<refBits | ref; ref is 0
	// for an empty slot, else 1 + the one step filed, or, with the listed
	// bit (the top of ref) set, 1 + the index in lists of their number.
	slots   []uint32
	refBits uint
	fpMask  uint32 // the fingerprint's bits, before the shift
	// lists holds the steps of the slots that hold several: at a slot's
	// first, their number, then the steps in the order filed.
	lists []int
}

// newHashIndex returns an index of the steps filed under each key
// (stepOf[k] under keys[k]), in the order filed.
func newHashIndex(seed maphash.Seed, keys []string, stepOf []int) hashIndex {
	return buildHashIndex(seed, keys, stepOf, 32)
}

// buildHashIndex is newHashIndex with fingerprints of at most maxFP bits
// (fewer make keys share slots more often; tests use that).
func buildHashIndex(seed maphash.Seed, keys []string, stepOf []int, maxFP uint) hashIndex {
	hashes := make([]uint64, len(keys))
	distinct := map[uint64]bool{}
	most := 2 * len(keys) // lists holds at most a number and a step a key
	for k, key := range keys {
		hashes[k] = maphash.String(seed, key)
		distinct[hashes[k]] = true
		most = max(most, stepOf[k])
	}
	size := 1 << bits.Len(uint(len(distinct)+len(distinct)/2))
	ix := hashIndex{seed: seed, slots: make([]uint32, size), refBits: uint(bits.Len(uint(most+1))) + 1}
	fpBits := min(32-min(ix.refBits, 32), maxFP)
	ix.fpMask = uint32(1)<<fpBits - 1
	// each key's slot: the first on its probe with its fingerprint, else
	// the first empty one
	filed := make([][]int, size)
	mask := uint32(size - 1)
	for k, h := range hashes {
		fp := uint32(h>>32) & ix.fpMask
		s := uint32(h) & mask
		for filed[s] != nil && ix.slots[s]>>ix.refBits != fp {
			s = (s + 1) & mask
		}
		if filed[s] == nil {
			ix.slots[s] = fp << ix.refBits
		}
		filed[s] = append(filed[s], stepOf[k])
	}
	listed := uint32(1) << (ix.refBits - 1)
	for s, steps := range filed {
		switch {
		case len(steps) == 1:
			ix.slots[s] |= uint32(steps[0]) + 1
		case len(steps) > 1:
			ix.slots[s] |= uint32(len(ix.lists)+1) | listed
			ix.lists = append(append(ix.lists, len(steps)), steps...)
		}
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
	refMask := uint32(1)<<ix.refBits - 1
	fp := uint32(h>>32) & ix.fpMask
	for s := uint32(h) & mask; ; s = (s + 1) & mask {
		slot := ix.slots[s]
		if slot == 0 {
			return nil
		}
		if slot>>ix.refBits != fp {
			continue
		}
		ref := slot & refMask
		if ref>>(ix.refBits-1) == 0 {
			one[0] = int(ref - 1)
			return one[:]
		}
		from := int(ref&(refMask>>1)) - 1
		to := from + 1 + ix.lists[from]
		return ix.lists[from+1 : to : to]
	}
}

// prefetch asks for the slot a lookup of hash h reads first to be brought
// into the cache, so that the lookup, made after other work, does not wait
// for memory.
func (ix *hashIndex) prefetch(h uint64) {
	if len(ix.slots) > 0 {
		prefetch(unsafe.Pointer(&ix.slots[uint32(h)&uint32(len(ix.slots)-1)]))
	}
}

// hash returns the hash of key in ix.
func (ix *hashIndex) hash(key string) uint64 { return maphash.String(ix.seed, key) }
