package informer

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBucketIsTheSetOfItsCells writes random adds and deletes to a bucket,
// a batch of them under one edit token at a time, and checks after each
// batch: the bucket holds the cells a map says, in its order, in chunks of
// 1 to bucketChunkMax with their last hash right, with no spare room once
// trimmed; and every bucket published before is unchanged (persistence: a
// later token copies what it changes). It runs again with buckets turned
// into tries past 50 cells (bucketChunkedMax), so that writes meet both forms
// and the move between them. Reproduce with INFORMER_TEST_SEED=<seed>.
func TestBucketIsTheSetOfItsCells(t *testing.T) {
	t.Run("chunks", testBucketIsTheSetOfItsCells)
	t.Run("chunks then trie", func(t *testing.T) {
		defer func(was int) { bucketChunkedMax = was }(bucketChunkedMax)
		bucketChunkedMax = 50
		testBucketIsTheSetOfItsCells(t)
	})
}

func testBucketIsTheSetOfItsCells(t *testing.T) {
	seed := testSeed(t)
	t.Logf("seed %d (INFORMER_TEST_SEED=%d to reproduce)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	cells := make([]*cell, 600)
	for i := range cells {
		cells[i] = &cell{key: fmt.Sprintf("ns/pod-%d", i)}
	}
	type published struct {
		b    bucket
		want []string
	}
	var history []published
	var b bucket
	want := map[*cell]bool{}
	for batch := range 300 {
		ed := &edit{}
		n := 1 + rng.IntN(8)
		if batch%50 == 0 {
			n = 200 // a large batch: splits and in-place growth
		}
		for range n {
			e := cells[rng.IntN(len(cells))]
			if rng.IntN(3) == 0 || (batch > 150 && rng.IntN(2) == 0) {
				var ok bool
				b, ok = b.del(ed, e)
				if ok != want[e] {
					t.Fatalf("batch %d: del of %s reported %v, the set had it: %v", batch, e.key, ok, want[e])
				}
				delete(want, e)
			} else {
				b = b.set(ed, e)
				want[e] = true
			}
		}
		ed.trim()
		checkBucket(t, b, want)
		if b.Len() > bucketChunkedMax && !b.isBig() {
			t.Fatalf("batch %d: %d cells kept in chunks, past %d", batch, b.Len(), bucketChunkedMax)
		}
		if b.Len() > 0 && b.hasSpare() {
			t.Fatalf("batch %d: spare room left after trim", batch)
		}
		history = append(history, published{b, keysOf(b)})
		for i, p := range history {
			if got := keysOf(p.b); !slices.Equal(got, p.want) {
				t.Fatalf("batch %d changed the bucket published after batch %d", batch, i)
			}
		}
	}
}

func keysOf(b bucket) []string {
	var keys []string
	b.each(func(e *cell) bool { keys = append(keys, e.key); return true })
	return keys
}

// checkBucket checks b against want and the bucket's invariants.
func checkBucket(t *testing.T, b bucket, want map[*cell]bool) {
	t.Helper()
	got := map[*cell]bool{}
	var prev *cell
	big := b != nil && b.isBig()
	b.each(func(e *cell) bool {
		if !big && prev != nil && !keyBefore(trieHash(prev.key), prev.key, trieHash(e.key), e.key) {
			t.Fatalf("%s does not sort before %s", prev.key, e.key)
		}
		prev, got[e] = e, true
		return true
	})
	if !maps.Equal(got, want) || b.Len() != len(want) {
		t.Fatalf("bucket holds %d cells (Len %d), want %d", len(got), b.Len(), len(want))
	}
	for e := range want {
		if !b.has(e) {
			t.Fatalf("has(%s) = false", e.key)
		}
	}
	if b == nil {
		return
	}
	for i, ch := range b.chunks {
		if len(ch.cells) == 0 || len(ch.cells) >= bucketChunkMax {
			t.Fatalf("chunk %d holds %d cells", i, len(ch.cells))
		}
		if last := ch.cells[len(ch.cells)-1]; ch.lastHash != trieHash(last.key) {
			t.Fatalf("chunk %d: lastHash is not its last cell's", i)
		}
	}
}

// TestBucketKeepsOneCellPerKey: a key deleted and added back gets a new
// cell; the bucket then holds that cell, and deleting the old one (already
// replaced) leaves it.
func TestBucketKeepsOneCellPerKey(t *testing.T) {
	ed := &edit{}
	cells := []*cell{{key: "ns/a"}, {key: "ns/b"}, {key: "ns/a"}}
	var b bucket
	for _, c := range cells {
		b = b.set(ed, c)
	}
	b, removed := b.del(ed, cells[0])
	if removed {
		t.Error("del removed a cell the bucket no longer held")
	}
	keys := keysOf(b)
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"ns/a", "ns/b"}) || b.Len() != 2 || !b.has(cells[2]) || b.has(cells[0]) {
		t.Fatalf("bucket holds %q (Len %d), want the second cell of ns/a and ns/b", keys, b.Len())
	}
}

// TestBucketCostsAboutAPointerPerCell pins what an index costs per (value,
// object) pair: a bucket of 1,000 cells filled by one batch, then 200 single
// writes, holds under 12 B per cell (a pointer, and the chunk's share).
func TestBucketCostsAboutAPointerPerCell(t *testing.T) {
	var b bucket
	ed := &edit{}
	cells := make([]*cell, 1000)
	for i := range cells {
		cells[i] = &cell{key: fmt.Sprintf("shop/web-%d", i)}
		b = b.set(ed, cells[i])
	}
	ed.trim()
	for i := range 200 {
		ed := &edit{}
		if i%2 == 0 {
			b, _ = b.del(ed, cells[i])
		} else {
			b = b.set(ed, &cell{key: fmt.Sprintf("shop/new-%d", i)})
		}
		ed.trim()
	}
	bytes := 48 + 8*cap(b.chunks)
	for _, ch := range b.chunks {
		bytes += 48 + 8*cap(ch.cells) // the chunk (40 B, a 48-byte object) and its array
	}
	if per := float64(bytes) / float64(b.Len()); per > 12 {
		t.Fatalf("%.1f B per cell in %d chunks, want at most 12", per, len(b.chunks))
	}
}
