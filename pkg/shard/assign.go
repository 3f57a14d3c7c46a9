package shard

import (
	"slices"

	"github.com/deltacache/deltacache/pkg/informer"
)

// Assign returns the slots each member owns: every slot goes to the member
// with the highest rendezvous score mix64(slot·φ ⊕ hash(member)), ties
// broken by the smaller identity. It is deterministic (every replica that
// sees the same members computes the same owners) and moves few slots when
// a member joins or leaves: only the slots the joining member wins, or the
// leaving member held. No members: an empty map.
func Assign(members []string) map[string]Slots {
	out := make(map[string]Slots, len(members))
	if len(members) == 0 {
		return out
	}
	ms := slices.Clone(members)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	seeds := make([]uint64, len(ms))
	for i, m := range ms {
		seeds[i] = informer.ShardHash(m)
	}
	owned := make([]Slots, len(ms))
	for slot := range NumSlots {
		best, bestScore := 0, uint64(0)
		for i, seed := range seeds {
			if score := mix64(uint64(slot)*0x9e3779b97f4a7c15 ^ seed); i == 0 || score > bestScore {
				best, bestScore = i, score
			}
		}
		owned[best].Add(slot)
	}
	for i, m := range ms {
		out[m] = owned[i]
	}
	return out
}
