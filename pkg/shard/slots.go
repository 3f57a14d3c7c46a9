package shard

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/deltacache/deltacache/pkg/informer"
)

// NumSlots is the number of equal slots the hash space is cut into. Slot i
// holds the hashes [i·2^54, (i+1)·2^54): the top ten bits of the hash.
const NumSlots = 1024

const slotShift = 64 - 10 // log2(NumSlots) = 10

// SlotOfHash returns the slot holding hash h.
func SlotOfHash(h uint64) int { return int(h >> slotShift) }

// SlotOfUID returns the slot of an object with this uid under uid sharding:
// the slot of the server's hash of the uid, so that a slot is one contiguous
// range of a shardSelector.
func SlotOfUID(uid string) int { return SlotOfHash(informer.ShardHash(uid)) }

// SlotOfNamespace returns the slot of a namespace under namespace sharding:
// the slot of the namespace's FNV-1a hash after a 64-bit finalizer (murmur3's
// fmix64). The server's hash alone does not spread namespaces: names that
// differ in their last characters hash close together (ns-00 … ns-19 all
// begin 0x7e7), so equal ranges of it would give them all to one replica;
// the finalizer makes every bit of the slot depend on every bit of the name.
func SlotOfNamespace(ns string) int { return SlotOfHash(mix64(informer.ShardHash(ns))) }

// mix64 is murmur3's 64-bit finalizer: a bijection whose output bits each
// depend on all input bits.
func mix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// Slots is a set of slots. The zero value is empty; Slots are values
// (copied on assignment) and comparable with ==.
type Slots struct {
	words [NumSlots / 64]uint64
}

// AllSlots returns the set of every slot.
func AllSlots() Slots {
	var s Slots
	for i := range s.words {
		s.words[i] = math.MaxUint64
	}
	return s
}

// Add adds slot i (0 ≤ i < NumSlots).
func (s *Slots) Add(i int) { s.words[i/64] |= 1 << (i % 64) }

// Has reports whether slot i is in s.
func (s Slots) Has(i int) bool { return s.words[i/64]&(1<<(i%64)) != 0 }

// Len is the number of slots in s.
func (s Slots) Len() int {
	n := 0
	for _, w := range s.words {
		n += bits.OnesCount64(w)
	}
	return n
}

// IsEmpty reports whether s has no slot.
func (s Slots) IsEmpty() bool { return s == Slots{} }

// Union returns s ∪ o.
func (s Slots) Union(o Slots) Slots {
	for i := range s.words {
		s.words[i] |= o.words[i]
	}
	return s
}

// Intersect returns s ∩ o.
func (s Slots) Intersect(o Slots) Slots {
	for i := range s.words {
		s.words[i] &= o.words[i]
	}
	return s
}

// Minus returns s \ o.
func (s Slots) Minus(o Slots) Slots {
	for i := range s.words {
		s.words[i] &^= o.words[i]
	}
	return s
}

// ContainsHash reports whether the slot of hash h is in s.
func (s Slots) ContainsHash(h uint64) bool { return s.Has(SlotOfHash(h)) }

// runs calls f for every maximal run [first, last] of consecutive slots.
func (s Slots) runs(f func(first, last int)) {
	for i := 0; i < NumSlots; {
		if !s.Has(i) {
			i++
			continue
		}
		j := i
		for j+1 < NumSlots && s.Has(j+1) {
			j++
		}
		f(i, j)
		i = j + 1
	}
}

// HashRanges returns the hash ranges of s, one per run of consecutive slots,
// in ascending order (none for the empty set).
func (s Slots) HashRanges() []informer.HashRange {
	var out []informer.HashRange
	s.runs(func(first, last int) {
		out = append(out, informer.HashRange{
			First: uint64(first) << slotShift,
			Last:  uint64(last)<<slotShift | (1<<slotShift - 1),
		})
	})
	return out
}

// String renders s as runs, "0-340,702,1000-1023"; "" for the empty set.
// ParseSlots reads it back.
func (s Slots) String() string {
	var b strings.Builder
	s.runs(func(first, last int) {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(first))
		if last > first {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(last))
		}
	})
	return b.String()
}

// ParseSlots reads the rendering of String.
func ParseSlots(text string) (Slots, error) {
	var s Slots
	if text == "" {
		return s, nil
	}
	for part := range strings.SplitSeq(text, ",") {
		a, b, isRun := strings.Cut(part, "-")
		first, err := strconv.Atoi(a)
		if err != nil {
			return Slots{}, fmt.Errorf("slot %q: %w", part, err)
		}
		last := first
		if isRun {
			if last, err = strconv.Atoi(b); err != nil {
				return Slots{}, fmt.Errorf("slot run %q: %w", part, err)
			}
		}
		if first < 0 || last >= NumSlots || first > last {
			return Slots{}, fmt.Errorf("slot run %q out of [0, %d)", part, NumSlots)
		}
		for i := first; i <= last; i++ {
			s.Add(i)
		}
	}
	return s, nil
}
