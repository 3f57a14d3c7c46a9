package informer

import (
	"strings"
	"testing"

	apisharding "k8s.io/apiserver/pkg/sharding"
)

// oneHashRanges returns n one-hash ranges spread over the hash space, sorted.
func oneHashRanges(n int) []HashRange {
	out := make([]HashRange, n)
	step := ^uint64(0) / uint64(n+1)
	for i := range out {
		h := step * uint64(i+1)
		out[i] = HashRange{First: h, Last: h}
	}
	return out
}

func TestServerParsesTheLongestSelectorAndRejectsOneClauseMore(t *testing.T) {
	sel := &ShardSelector{Field: ShardByNamespace, Ranges: oneHashRanges(1176)}
	if got := len(sel.String()); got > maxShardSelectorLength {
		t.Fatalf("1176 namespace clauses are %d characters, want ≤ %d", got, maxShardSelectorLength)
	}
	if _, err := apisharding.Parse(sel.String()); err != nil {
		t.Fatalf("server rejects a selector of %d characters: %v", len(sel.String()), err)
	}
	longer := &ShardSelector{Field: ShardByNamespace, Ranges: oneHashRanges(1177)}
	if got := len(longer.String()); got <= maxShardSelectorLength {
		t.Fatalf("1177 clauses are %d characters, want > %d", got, maxShardSelectorLength)
	}
	_, err := apisharding.Parse(longer.String())
	if err == nil || !strings.Contains(err.Error(), "size") {
		t.Fatalf("server parses a selector of %d characters: err = %v, want a size error", len(longer.String()), err)
	}
}

func TestForServerKeepsAShortSelectorAndCoarsensALongOneToCoverIt(t *testing.T) {
	short := &ShardSelector{Field: ShardByNamespace, Ranges: oneHashRanges(100)}
	if short.forServer() != short {
		t.Fatal("a selector of 100 clauses was coarsened")
	}
	long := &ShardSelector{Field: ShardByNamespace, Ranges: oneHashRanges(3000)}
	// Widen one gap so that it must be kept.
	long.Ranges[0] = HashRange{First: 0, Last: 0}
	wire := long.forServer()
	if n := len(wire.String()); n > maxShardSelectorLength {
		t.Fatalf("coarsened selector is %d characters, want ≤ %d", n, maxShardSelectorLength)
	}
	if len(wire.Ranges) != 1176 {
		t.Errorf("coarsened selector has %d ranges, want 1176", len(wire.Ranges))
	}
	if _, err := apisharding.Parse(wire.String()); err != nil {
		t.Fatalf("server rejects the coarsened selector: %v", err)
	}
	for _, r := range long.Ranges {
		if !wire.ContainsHash(r.First) {
			t.Fatalf("coarsened selector drops hash %#x of the original", r.First)
		}
	}
	if wire.ContainsHash(long.Ranges[0].Last + 1) {
		t.Errorf("the widest gap, after %#x, was merged", long.Ranges[0].Last)
	}
	if (&ShardSelector{Field: ShardByUID}).forServer().Ranges != nil {
		t.Error("an empty selector was changed")
	}
}
