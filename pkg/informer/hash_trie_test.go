package informer

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// trieContent returns the entries of t as a map, checking that each key
// appears once and that Len agrees.
func trieContent[V any](t *testing.T, tr trie[indexValue, V]) map[string]V {
	t.Helper()
	out := map[string]V{}
	tr.each(func(k indexValue, v V) bool {
		if _, dup := out[string(k)]; dup {
			t.Fatalf("key %q listed twice", k)
		}
		out[string(k)] = v
		return true
	})
	if len(out) != tr.Len() {
		t.Fatalf("each listed %d entries, Len() = %d", len(out), tr.Len())
	}
	return out
}

// TestTrieMatchesMapAndOldVersionsNeverChange runs random sets and deletes
// against a map; every published version must keep its content forever,
// whatever is written after it. Reproduce with INFORMER_TEST_SEED=<seed>.
func TestTrieMatchesMapAndOldVersionsNeverChange(t *testing.T) {
	seed := testSeed(t)
	t.Logf("seed %d (INFORMER_TEST_SEED=%d to reproduce)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 2))

	type version struct {
		tr   trie[indexValue, int]
		want map[string]int
	}
	var tr trie[indexValue, int]
	model := map[string]int{}
	var kept []version
	for i := range 5000 {
		key := fmt.Sprintf("k%d", rng.IntN(700))
		ed := &edit{}
		if rng.IntN(3) == 0 {
			var removed bool
			tr, removed = tr.del(ed, indexValue(key))
			_, had := model[key]
			if removed != had {
				t.Fatalf("step %d: del(%s) removed=%v, model had it=%v", i, key, removed, had)
			}
			delete(model, key)
		} else {
			tr = tr.set(ed, indexValue(key), i)
			model[key] = i
		}
		if i%500 == 0 {
			kept = append(kept, version{tr, maps.Clone(model)})
		}
	}
	if got := trieContent(t, tr); !maps.Equal(got, model) {
		t.Fatalf("final content differs from the model: %d vs %d entries", len(got), len(model))
	}
	for k, v := range model {
		if got, ok := tr.get(indexValue(k)); !ok || got != v {
			t.Fatalf("get(%s) = %d, %v; want %d", k, got, ok, v)
		}
	}
	if _, ok := tr.get(indexValue("absent")); ok {
		t.Fatal("get of an absent key succeeded")
	}
	for i, v := range kept {
		if got := trieContent(t, v.tr); !maps.Equal(got, v.want) {
			t.Fatalf("version %d changed after later writes", i)
		}
	}
}

// Keys whose hashes collide: all on one hash, hashes that differ in their top
// bits only, and in their low bits only.
type (
	collideAll string
	collideTop string
	collideLow string
)

func (collideAll) trieHash() uint64   { return 42 }
func (k collideTop) trieHash() uint64 { return uint64(len(k)) << 60 }
func (k collideLow) trieHash() uint64 { return uint64(len(k) % 3) }

// TestTrieHandlesFullHashCollisions forces every key onto one hash, and
// pairs of keys onto hashes that differ only in their last bits, so that
// entries go down to collision nodes and come back up when deleted.
func TestTrieHandlesFullHashCollisions(t *testing.T) {
	t.Run("all equal", testTrieCollisions[collideAll])
	t.Run("differ in the top bits only", testTrieCollisions[collideTop])
	t.Run("differ in the low bits only", testTrieCollisions[collideLow])
}

func testTrieCollisions[K interface {
	trieKey
	~string
}](t *testing.T) {
	var tr trie[K, int]
	keys := []K{"a", "bb", "ccc", "dddd", "eeeee", "ffffff", "g"}
	for i, k := range keys {
		n := tr.Len()
		if tr = tr.set(&edit{}, k, i); tr.Len() != n+1 {
			t.Fatalf("set(%s) did not add", k)
		}
	}
	tr = tr.set(&edit{}, "bb", 100)
	for i, k := range keys {
		want := i
		if k == "bb" {
			want = 100
		}
		if v, ok := tr.get(k); !ok || v != want {
			t.Fatalf("get(%s) = %d, %v; want %d", k, v, ok, want)
		}
	}
	if _, ok := tr.get("zz"); ok {
		t.Fatal("found an absent key")
	}
	for _, k := range slices.Backward(keys) {
		var removed bool
		if tr, removed = tr.del(&edit{}, k); !removed {
			t.Fatalf("del(%s) did not remove", k)
		}
		if _, ok := tr.get(k); ok {
			t.Fatalf("%s still found after del", k)
		}
	}
	if tr.Len() != 0 || len(tr.root.data) != 0 || len(tr.root.nodes) != 0 {
		t.Fatalf("root not empty after deleting everything: %d entries, %d nodes", len(tr.root.data), len(tr.root.nodes))
	}
}

// TestTrieEditTokenMutatesOnlyItsOwnNodes: writes under one token change the
// nodes that token created in place, and never a node published before.
func TestTrieEditTokenMutatesOnlyItsOwnNodes(t *testing.T) {
	var base trie[indexValue, int]
	ed := &edit{}
	for i := range 100 {
		base = base.set(ed, indexValue(fmt.Sprintf("k%d", i)), i)
	}
	before := trieContent(t, base)
	batch := &edit{}
	next := base
	for i := range 100 {
		next = next.set(batch, indexValue(fmt.Sprintf("k%d", i)), -i)
	}
	rootAfterFirst := next.root
	next = next.set(batch, indexValue("k0"), 7)
	if next.root != rootAfterFirst {
		t.Fatal("a second write under the same token copied its own root again")
	}
	if got := trieContent(t, base); !maps.Equal(got, before) {
		t.Fatal("writes under a new token changed the published trie")
	}
}

// spareNodes counts the nodes of the sub-trie at n with unused capacity.
func spareNodes[K trieKey, V any](n *trieNode[K, V]) int {
	if n == nil {
		return 0
	}
	count := 0
	if n.hasSpare() {
		count++
	}
	for _, c := range n.nodes {
		count += spareNodes(c)
	}
	return count
}

// TestTrieTrimLeavesNoSpareRoom writes batches of sets and deletes (several
// into the same nodes) under one token each: before trim some nodes grew in
// place; after it, no node of the trie keeps unused capacity, and the content
// is the map's.
func TestTrieTrimLeavesNoSpareRoom(t *testing.T) {
	var tr trie[indexValue, int]
	want := map[string]int{}
	grewSome := false
	for round := range 20 {
		ed := &edit{}
		for i := range 400 {
			k := fmt.Sprintf("k%d", (round*137+i*7)%3000)
			if i%5 == 4 {
				tr, _ = tr.del(ed, indexValue(k))
				delete(want, k)
				continue
			}
			tr = tr.set(ed, indexValue(k), i)
			want[k] = i
		}
		if spareNodes(tr.root) > 0 {
			grewSome = true
		}
		ed.trim()
		if n := spareNodes(tr.root); n != 0 {
			t.Fatalf("round %d: %d nodes keep spare capacity after trim", round, n)
		}
	}
	if !grewSome {
		t.Fatal("no batch grew a node in place: the test does not exercise trim")
	}
	if got := trieContent(t, tr); !maps.Equal(got, want) {
		t.Fatalf("content differs from the map: %d entries, want %d", len(got), len(want))
	}
}

// TestTrieMappedKeepsKeysMapsValuesAndLeavesTheOriginal: mapped gives every
// key fn's value, in nodes the token owns (writes under it then copy
// nothing), and never changes the trie it maps.
func TestTrieMappedKeepsKeysMapsValuesAndLeavesTheOriginal(t *testing.T) {
	var tr trie[indexValue, int]
	ed := &edit{}
	model := map[string]int{}
	for i := range 3000 {
		key := fmt.Sprintf("k%d", i)
		tr = tr.set(ed, indexValue(key), i)
		model[key] = i
	}
	tr, _ = tr.del(ed, indexValue("k7"))
	delete(model, "k7")
	ed.trim()

	med := &edit{}
	m := tr.mapped(med, func(key indexValue, v int) (indexValue, int) { return key, -v })
	want := map[string]int{}
	for k, v := range model {
		want[k] = -v
	}
	if got := trieContent(t, m); !maps.Equal(got, want) {
		t.Fatalf("mapped content differs: %d vs %d entries", len(got), len(want))
	}
	for k, v := range want {
		if got, ok := m.get(indexValue(k)); !ok || got != v {
			t.Fatalf("mapped get(%s) = %d, %v; want %d", k, got, ok, v)
		}
	}
	if got := trieContent(t, tr); !maps.Equal(got, model) {
		t.Fatal("mapping changed the original trie")
	}
	// Writes under the mapping's token change its nodes in place: the root
	// stays the same node.
	root := m.root
	m = m.set(med, indexValue("k1"), 99)
	m, _ = m.del(med, indexValue("k2"))
	if m.root != root {
		t.Fatal("a write under the mapping's token copied its root")
	}
	if got, _ := tr.get(indexValue("k1")); got != 1 {
		t.Fatalf("the original's k1 = %d after a write to the mapped trie, want 1", got)
	}
	if got, _ := m.get(indexValue("k1")); got != 99 {
		t.Fatalf("the mapped trie's k1 = %d after the write, want 99", got)
	}
	if _, ok := tr.get(indexValue("k2")); !ok {
		t.Fatal("a delete from the mapped trie removed k2 from the original")
	}
	var empty trie[indexValue, int]
	if got := empty.mapped(med, func(k indexValue, _ int) (indexValue, int) { return k, 0 }); got.Len() != 0 || got.root != nil {
		t.Fatal("mapping the empty trie gave a non-empty one")
	}
}

// TestTrieDeleteUnderANewTokenLeavesNothingToTrim: a delete from nodes the
// token does not own copies them at exactly the size they end with, so a
// batch of one delete (Indexer.Delete) has nothing to trim at commit and
// no node keeps spare room.
func TestTrieDeleteUnderANewTokenLeavesNothingToTrim(t *testing.T) {
	var tr trie[indexValue, int]
	want := map[string]int{}
	ed := &edit{}
	for i := range 2000 {
		k := fmt.Sprintf("k%d", i)
		tr = tr.set(ed, indexValue(k), i)
		want[k] = i
	}
	ed.trim()
	for i := range 2000 {
		if i%3 == 0 {
			continue
		}
		k := fmt.Sprintf("k%d", i)
		ed := &edit{}
		tr, _ = tr.del(ed, indexValue(k))
		delete(want, k)
		if len(ed.grown) != 0 || spareNodes(tr.root) != 0 {
			t.Fatalf("delete of %s: %d nodes to trim, %d with spare room", k, len(ed.grown), spareNodes(tr.root))
		}
	}
	if got := trieContent(t, tr); !maps.Equal(got, want) {
		t.Fatalf("content differs from the map: %d entries, want %d", len(got), len(want))
	}
}
