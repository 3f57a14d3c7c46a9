package informer

import (
	"cmp"
	"slices"
)

// maxShardSelectorLength is the longest shardSelector kube-apiserver parses:
// its parser (k8s.io/apiserver/pkg/sharding.Parse) is cel-go's with the
// default expression size limit of 100,000 code points, and a longer
// selector is rejected with a parse error. There is no limit on the number
// of shardRange clauses as such: a clause on object.metadata.namespace is 81
// characters plus 4 for " || ", so about 1,176 clauses fit.
const maxShardSelectorLength = 100_000

// forServer returns the selector to send to the server for s: s itself when
// its String fits in maxShardSelectorLength (or s is nil or empty), else a
// coarser selector of the same field whose ranges cover s's: adjacent
// ranges are merged across the smallest gaps until it fits. The server then
// returns a superset of s's objects, and the client-side filter (Matches,
// with s) drops the surplus. s's Ranges must be sorted and disjoint, as
// the selectors pkg/shard and pkg/cache build are.
func (s *ShardSelector) forServer() *ShardSelector {
	if s == nil || len(s.Ranges) == 0 || len(s.String()) <= maxShardSelectorLength {
		return s
	}
	// A clause is 20 hex characters of its end shorter than the space's end
	// (2^64, 17 digits), which only the last range can have.
	clause := len((&ShardSelector{Field: s.Field, Ranges: []HashRange{{}}}).String()) + len(" || ")
	keep := max(1, (maxShardSelectorLength+len(" || "))/clause)
	out := s.merged(keep)
	if len(out.String()) > maxShardSelectorLength && keep > 1 {
		out = s.merged(keep - 1)
	}
	return out
}

// merged returns s with at most keep ranges: adjacent ranges are merged
// across every gap but the keep-1 widest.
func (s *ShardSelector) merged(keep int) *ShardSelector {
	type gap struct {
		after int    // the gap between Ranges[after] and Ranges[after+1]
		width uint64 // its width
	}
	gaps := make([]gap, 0, len(s.Ranges)-1)
	for i := 0; i+1 < len(s.Ranges); i++ {
		gaps = append(gaps, gap{after: i, width: s.Ranges[i+1].First - s.Ranges[i].Last})
	}
	slices.SortFunc(gaps, func(a, b gap) int { return cmp.Compare(b.width, a.width) })
	split := make([]bool, len(s.Ranges))
	for _, g := range gaps[:min(keep-1, len(gaps))] {
		split[g.after] = true
	}
	out := &ShardSelector{Field: s.Field, Ranges: make([]HashRange, 0, keep)}
	cur := s.Ranges[0]
	for i := 1; i < len(s.Ranges); i++ {
		if split[i-1] {
			out.Ranges = append(out.Ranges, cur)
			cur = s.Ranges[i]
			continue
		}
		cur.Last = s.Ranges[i].Last
	}
	out.Ranges = append(out.Ranges, cur)
	return out
}

// wire returns the shardSelector parameter of a request for sel, and the
// selector it renders: sel itself, or the coarser sel.forServer when sel's
// String is longer than the server accepts (the client-side filter, with sel,
// drops the surplus). The string is built once when it fits.
func (sel *ShardSelector) wire() (string, *ShardSelector) {
	param := sel.String()
	if len(param) <= maxShardSelectorLength {
		return param, sel
	}
	coarse := sel.forServer()
	return coarse.String(), coarse
}
