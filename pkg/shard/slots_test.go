package shard

import (
	"fmt"
	"math"
	"testing"

	"github.com/deltacache/deltacache/pkg/informer"
)

func TestSlotsStringParsesBack(t *testing.T) {
	var s Slots
	for _, i := range []int{0, 1, 2, 7, 500, 1022, 1023} {
		s.Add(i)
	}
	if got, want := s.String(), "0-2,7,500,1022-1023"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	back, err := ParseSlots(s.String())
	if err != nil || back != s {
		t.Fatalf("ParseSlots(%q) = %v, %v; want the same set", s.String(), back.String(), err)
	}
	for _, bad := range []string{"x", "5-3", "1024", "-1", "2-"} {
		if _, err := ParseSlots(bad); err == nil {
			t.Errorf("ParseSlots(%q) accepted", bad)
		}
	}
	if s, err := ParseSlots(""); err != nil || !s.IsEmpty() {
		t.Errorf("ParseSlots(\"\") = %v, %v", s.String(), err)
	}
}

func TestSlotHashRangesCoverExactlyTheirHashes(t *testing.T) {
	all := AllSlots().HashRanges()
	if len(all) != 1 || all[0] != informer.FullRange {
		t.Fatalf("AllSlots().HashRanges() = %v, want the full range", all)
	}
	var s Slots
	s.Add(3)
	s.Add(4)
	s.Add(9)
	got := s.HashRanges()
	want := []informer.HashRange{{First: 3 << 54, Last: 5<<54 - 1}, {First: 9 << 54, Last: 10<<54 - 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("HashRanges() = %v, want %v", got, want)
	}
	for i := range 200 {
		uid := fmt.Sprintf("uid-%d", i)
		sel := &informer.ShardSelector{Field: informer.ShardByUID, Ranges: s.HashRanges()}
		if in := s.Has(SlotOfUID(uid)); in != sel.ContainsHash(informer.ShardHash(uid)) {
			t.Fatalf("%s: slot %d in set = %v, but its hash in the ranges = %v", uid, SlotOfUID(uid), in, !in)
		}
	}
	if SlotOfHash(math.MaxUint64) != NumSlots-1 || SlotOfHash(0) != 0 {
		t.Fatal("the extreme hashes are not in the extreme slots")
	}
}

func TestAssignGivesEverySlotToExactlyOneMemberAndIsDeterministic(t *testing.T) {
	members := []string{"replica-b", "replica-a", "replica-c"}
	a := Assign(members)
	b := Assign([]string{"replica-c", "replica-b", "replica-a", "replica-a"})
	var union Slots
	total := 0
	for _, m := range members {
		if a[m] != b[m] {
			t.Errorf("%s: the order of members changed its slots", m)
		}
		union = union.Union(a[m])
		total += a[m].Len()
		t.Logf("%s owns %d slots (%+.1f%% of a third)", m, a[m].Len(), 100*(float64(a[m].Len())*3/NumSlots-1))
		if n := a[m].Len(); n < NumSlots/3*85/100 || n > NumSlots/3*115/100 {
			t.Errorf("%s owns %d slots, want a third ±15%%", m, n)
		}
	}
	if union != AllSlots() || total != NumSlots {
		t.Fatalf("the members own %d slots in all, %d distinct; want each of %d once", total, union.Len(), NumSlots)
	}
	if len(Assign(nil)) != 0 {
		t.Fatal("Assign(nil) is not empty")
	}
}

func TestAssignMovesOnlyTheJoiningMembersSlots(t *testing.T) {
	before := Assign([]string{"a", "b", "c"})
	after := Assign([]string{"a", "b", "c", "d"})
	for _, m := range []string{"a", "b", "c"} {
		if lost := after[m].Minus(before[m]); !lost.IsEmpty() {
			t.Errorf("%s gained slots %s when d joined", m, lost.String())
		}
	}
	moved := before["a"].Union(before["b"]).Union(before["c"]).Minus(after["a"].Union(after["b"]).Union(after["c"]))
	if moved != after["d"] {
		t.Fatalf("slots moved %s, d owns %s", moved.String(), after["d"].String())
	}
}

// TestNamespaceSlotsBalanceWhereTheServersHashDoesNot measures the issue's
// case: ns-000 … ns-299 under the server's hash all fall into one third of
// the space; through SlotOfNamespace and Assign each of three replicas gets
// about a third of them.
func TestNamespaceSlotsBalanceWhereTheServersHashDoesNot(t *testing.T) {
	const n = 300
	members := []string{"replica-0", "replica-1", "replica-2"}
	owners := Assign(members)
	count := map[string]int{}
	var serverThirds [3]int
	for i := range n {
		ns := fmt.Sprintf("ns-%03d", i)
		serverThirds[informer.ShardHash(ns)/(math.MaxUint64/3+1)]++
		for _, m := range members {
			if owners[m].Has(SlotOfNamespace(ns)) {
				count[m]++
			}
		}
	}
	t.Logf("server hash, equal thirds: %v; SlotOfNamespace+Assign: %v", serverThirds, count)
	if serverThirds != [3]int{0, n, 0} {
		t.Errorf("server hash thirds = %v, the issue measured them all in one", serverThirds)
	}
	for _, m := range members {
		if c := count[m]; c < n/3*85/100 || c > n/3*115/100 {
			t.Errorf("%s gets %d of %d namespaces, want a third ±15%%", m, c, n)
		}
	}
}
