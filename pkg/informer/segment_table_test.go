package informer

import "testing"

// TestNewSegmentIsOneAllocation: a segment and its slots are one allocation
// up to segmentInline slots (a batch copies a segment for each key it adds or
// deletes), with the length and room asked for.
func TestNewSegmentIsOneAllocation(t *testing.T) {
	for _, c := range []struct{ n, room, allocs int }{
		{0, 0, 1}, {0, 1, 1}, {3, 1, 1}, {5, 0, 1}, {7, 1, 1}, {8, 1, 2}, {12, 0, 2},
	} {
		var s *segment
		allocs := testing.AllocsPerRun(50, func() { s = newSegment(c.n, c.room) })
		if int(allocs) != c.allocs {
			t.Errorf("newSegment(%d, %d): %v allocations, want %d", c.n, c.room, allocs, c.allocs)
		}
		if len(s.slots) != c.n || cap(s.slots) != c.n+c.room {
			t.Errorf("newSegment(%d, %d): len %d cap %d", c.n, c.room, len(s.slots), cap(s.slots))
		}
	}
}
