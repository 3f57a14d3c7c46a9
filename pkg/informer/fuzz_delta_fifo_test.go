package informer

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// fifoConsumer is the informer's pop loop reduced to its store: it applies
// popped Deltas to the Indexer the DeltaFIFO knows, and checks that no change
// of an object arrives after that object (its UID) was deleted.
type fifoConsumer struct {
	t     *testing.T
	store *Indexer
	dead  map[types.UID]bool
}

// remove deletes key and its index entries, without recording a resourceVersion
// (test support: the informer writes through Delete and its batches).
func (ix *Indexer) remove(key string) {
	b := ix.beginBatch(0)
	b.take(key)
	b.commit()
}

func (c *fifoConsumer) process(ds deltaList, _ bool) error {
	c.t.Helper()
	if len(ds) == 0 || len(ds) > 3 {
		c.t.Fatalf("popped %d deltas, want 1..3", len(ds))
	}
	for _, d := range ds {
		key := keyOfObj(d.Object)
		stored, exists, _ := c.store.GetByKey(key)
		if d.Type == deltaDeleted {
			if exists {
				c.dead[stored.(*corev1.Pod).UID] = true
				c.store.remove(key)
			}
			continue
		}
		p := d.Object.(*corev1.Pod)
		if c.dead[p.UID] {
			c.t.Fatalf("%s delta for %s (uid %s) after its delete", d.Type, key, p.UID)
		}
		_ = c.store.put(key, p)
	}
	return nil
}

// checkFIFOShape checks the queue's structural invariants: every queued key
// once, items and queue agree, at most three Deltas per key and never two
// deletes in a row.
func checkFIFOShape(t *testing.T, f *deltaFIFO, step int) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queue) != len(f.items) {
		t.Fatalf("step %d: %d queued keys, %d items", step, len(f.queue), len(f.items))
	}
	seen := map[string]bool{}
	for _, k := range f.queue {
		if seen[k] {
			t.Fatalf("step %d: key %s queued twice", step, k)
		}
		seen[k] = true
		ds := f.items[k]
		if len(ds) == 0 || len(ds) > 3 {
			t.Fatalf("step %d: key %s holds %d deltas", step, k, len(ds))
		}
		for i := 1; i < len(ds); i++ {
			if ds[i].Type == deltaDeleted && ds[i-1].Type == deltaDeleted {
				t.Fatalf("step %d: key %s holds two deletes in a row", step, k)
			}
		}
	}
}

// FuzzDeltaFIFOOperations drives a DeltaFIFO (with an Indexer as its known
// objects) the way a Reflector and an informer do, from a byte-coded
// sequence: watch adds, updates and deletes of a consistent server, relists
// (Replace) to a new server state, resyncs, and pops applied to the store.
// After every step the queue's shape is checked; after draining, the store
// must equal the server, HasSynced must hold, and no object may have been
// changed after its delete. The seed corpus runs with plain `go test`;
// explore with `go test -fuzz FuzzDeltaFIFOOperations ./pkg/informer`.
func FuzzDeltaFIFOOperations(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 3, 0, 1, 1, 3, 3, 2, 0xff, 3, 3, 3})
	f.Add([]byte{2, 0x0f, 0, 1, 1, 1, 0, 1, 2, 0xf0, 4, 3, 3, 0, 5, 1, 5})
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 0, 2, 0xaa, 1, 0, 0, 0, 2, 0x55, 4, 3})
	f.Add(slices.Repeat([]byte{0, 3, 1, 3, 0, 7, 2, 0x3c, 3, 4, 0, 7, 1, 7, 3}, 20))
	f.Fuzz(func(t *testing.T, ops []byte) {
		store := NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, nil)
		fifo := newDeltaFIFO(deltaFIFOOptions{KnownObjects: store})
		c := &fifoConsumer{t: t, store: store, dead: map[types.UID]bool{}}
		server := map[string]*corev1.Pod{}
		rv, uid := 0, 0
		podAt := func(name string, keepUID types.UID) *corev1.Pod {
			rv++
			p := pod("a", name, strconv.Itoa(rv))
			p.UID = keepUID
			if p.UID == "" {
				uid++
				p.UID = types.UID(fmt.Sprintf("u%d", uid))
			}
			return p
		}
		populated := false
		for i, step := 0, 0; i < len(ops); step++ {
			op := ops[i] % 5
			arg := byte(0)
			if i+1 < len(ops) {
				arg = ops[i+1]
			}
			i += 2
			name := fmt.Sprintf("p%d", arg%8)
			key := "a/" + name
			switch op {
			case 0: // watch: created, or modified if it exists
				if old, ok := server[key]; ok {
					p := podAt(name, old.UID)
					server[key] = p
					_ = fifo.Update(p)
				} else {
					p := podAt(name, "")
					server[key] = p
					_ = fifo.Add(p)
				}
				populated = true
			case 1: // watch: deleted (or a delete of an unknown object)
				if old, ok := server[key]; ok {
					delete(server, key)
					_ = fifo.Delete(old)
				} else {
					_ = fifo.Delete(pod("a", name, strconv.Itoa(rv)))
				}
				populated = true
			case 2: // relist: the server's state is now the keys whose bit is set
				next := map[string]*corev1.Pod{}
				var list []any
				for j := range 8 {
					if arg>>j&1 == 0 {
						continue
					}
					k := fmt.Sprintf("a/p%d", j)
					var keep types.UID
					if old, ok := server[k]; ok && j%2 == 0 {
						keep = old.UID // even keys changed in place, odd ones re-created
					}
					p := podAt(fmt.Sprintf("p%d", j), keep)
					next[k] = p
					list = append(list, p)
				}
				server = next
				_ = fifo.Replace(list, strconv.Itoa(rv))
				populated = true
			case 3: // the informer pops one key
				if fifo.Len() > 0 {
					_ = fifo.Pop(c.process)
				}
			case 4:
				_ = fifo.Resync()
			}
			checkFIFOShape(t, fifo, step)
		}
		for fifo.Len() > 0 {
			_ = fifo.Pop(c.process)
		}
		got := map[string]string{}
		for _, o := range store.List() {
			got[keyOfObj(o)] = describe(o)
		}
		want := map[string]string{}
		for k, p := range server {
			want[k] = describe(p)
		}
		if !maps.Equal(got, want) {
			t.Fatalf("store after draining:\n got %v\nwant %v", got, want)
		}
		if populated != fifo.HasSynced() {
			t.Fatalf("HasSynced = %v after draining, populated = %v", fifo.HasSynced(), populated)
		}
	})
}
