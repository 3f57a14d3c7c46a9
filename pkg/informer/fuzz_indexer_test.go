package informer

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// indexerModel is the obvious store: key → pod, indexes recomputed on demand.
type indexerModel struct {
	objs    map[string]*corev1.Pod
	indexed map[string]bool // index names present
	rv      string
}

// modelLabelIndex indexes pods by the label key; the value "bad" makes it
// fail, so error paths are exercised too.
func modelLabelIndex(key string) toolscache.IndexFunc {
	return func(obj any) ([]string, error) {
		v, ok := obj.(*corev1.Pod).Labels[key]
		switch {
		case !ok:
			return nil, nil
		case v == badLabelValue:
			return nil, errors.New("bad label")
		case v == "two":
			return []string{"two-a", "two-b"}, nil
		}
		return []string{v}, nil
	}
}

// filed returns, per value of index name, the sorted keys filed under it.
func (m *indexerModel) filed(name string) map[string][]string {
	fn := toolscache.MetaNamespaceIndexFunc
	if name != toolscache.NamespaceIndex {
		fn = modelLabelIndex(name)
	}
	out := map[string][]string{}
	for key, p := range m.objs {
		vals, err := fn(p)
		if err != nil {
			continue
		}
		for _, v := range vals {
			out[v] = append(out[v], key)
		}
	}
	for v := range out {
		slices.Sort(out[v])
	}
	return out
}

// check compares every read of ix with the model.
func (m *indexerModel) check(t *testing.T, ix *Indexer, step int) {
	t.Helper()
	want := slices.Sorted(maps.Keys(m.objs))
	keys := ix.ListKeys()
	slices.Sort(keys)
	if !slices.Equal(keys, want) {
		t.Fatalf("step %d: ListKeys = %v, want %v", step, keys, want)
	}
	if ix.Len() != len(want) || len(ix.List()) != len(want) {
		t.Fatalf("step %d: Len = %d, List has %d, want %d", step, ix.Len(), len(ix.List()), len(want))
	}
	for _, obj := range ix.List() {
		if m.objs[keyOfObj(obj)] != obj {
			t.Fatalf("step %d: List returned %s, not the stored object", step, describe(obj))
		}
	}
	for key, p := range m.objs {
		if got, ok, _ := ix.GetByKey(key); !ok || got != p {
			t.Fatalf("step %d: GetByKey(%s) = %v, %v", step, key, got, ok)
		}
	}
	if _, ok, _ := ix.GetByKey("absent/x"); ok {
		t.Fatalf("step %d: found an absent key", step)
	}
	for name := range m.indexed {
		filed := m.filed(name)
		values := slices.Sorted(maps.Keys(filed))
		if got := ix.ListIndexFuncValues(name); !slices.Equal(got, values) {
			t.Fatalf("step %d: ListIndexFuncValues(%s) = %v, want %v", step, name, got, values)
		}
		for _, v := range append(values, "none") {
			keys, err := ix.IndexKeys(name, v)
			if err != nil || !slices.Equal(keys, filed[v]) {
				t.Fatalf("step %d: IndexKeys(%s, %s) = %v, %v; want %v", step, name, v, keys, err, filed[v])
			}
			objs, err := ix.ByIndex(name, v)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]string, 0, len(objs))
			for _, o := range objs {
				got = append(got, keyOfObj(o))
			}
			slices.Sort(got)
			if !slices.Equal(got, filed[v]) {
				t.Fatalf("step %d: ByIndex(%s, %s) = %v, want %v", step, name, v, got, filed[v])
			}
		}
	}
	if got := ix.LastStoreSyncResourceVersion(); got != m.rv {
		t.Fatalf("step %d: store RV %q, want %q", step, got, m.rv)
	}
}

func (m *indexerModel) observe(rv string) {
	if rv != "" && !rvOlder(rv, m.rv) {
		m.rv = rv
	}
}

// FuzzIndexerOperations applies a byte-coded sequence of Add, Update,
// Delete, Replace, Bookmark and AddIndexers to an Indexer and to a model,
// comparing every read after each step. Its seed corpus runs with plain
// `go test`; explore with `go test -fuzz FuzzIndexerOperations ./pkg/informer`.
func FuzzIndexerOperations(f *testing.F) {
	f.Add([]byte{0, 1, 2, 0, 3, 4, 1, 5, 6, 2, 7, 8})
	f.Add([]byte{0, 0, 0, 0, 9, 1, 0, 17, 2, 3, 9, 1, 4, 0, 0, 12, 3, 3, 3})
	f.Add([]byte{0, 4, 200, 0, 5, 201, 0, 6, 202, 10, 0, 0, 11, 1, 1, 0, 7, 203, 3, 255, 3})
	f.Add(slices.Repeat([]byte{0, 13, 77, 1, 13, 0, 0, 21, 78, 12}, 30))
	f.Fuzz(func(t *testing.T, ops []byte) {
		ix := NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{
			toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
			appLabel:                  modelLabelIndex(appLabel),
		})
		m := &indexerModel{objs: map[string]*corev1.Pod{},
			indexed: map[string]bool{toolscache.NamespaceIndex: true, appLabel: true}}
		apps := []string{"web", "db", badLabelValue, "two", ""}
		tiers := []string{"fe", "be", badLabelValue}
		next := func(i *int) byte {
			if *i >= len(ops) {
				return 0
			}
			b := ops[*i]
			*i++
			return b
		}
		for i, step := 0, 0; i < len(ops); step++ {
			op := next(&i) % 6
			arg := next(&i)
			ns, name := fmt.Sprintf("ns%d", arg%3), fmt.Sprintf("p%d", arg/3%8)
			key := ns + "/" + name
			switch op {
			case 0, 1: // Add / Update with labels from the next byte
				lb := next(&i)
				p := pod(ns, name, strconv.Itoa(step+1))
				p.Labels = map[string]string{}
				if a := apps[int(lb)%len(apps)]; a != "" {
					p.Labels[appLabel] = a
				}
				p.Labels[tierLabel] = tiers[int(lb/8)%len(tiers)]
				err := ix.Update(p)
				failing := p.Labels[appLabel] == badLabelValue ||
					m.indexed[tierLabel] && p.Labels[tierLabel] == badLabelValue
				if failing != (err != nil) {
					t.Fatalf("step %d: Update error %v, want an error: %v", step, err, failing)
				}
				m.objs[key] = p
				m.observe(p.ResourceVersion)
			case 2: // Delete
				if err := ix.Delete(pod(ns, name, strconv.Itoa(step+1))); err != nil {
					t.Fatal(err)
				}
				delete(m.objs, key)
				m.observe(strconv.Itoa(step + 1))
			case 3: // Replace with the current pods whose bit in arg is set, plus one new
				var list []any
				keep := map[string]*corev1.Pod{}
				for j, k := range slices.Sorted(maps.Keys(m.objs)) {
					if arg>>(j%8)&1 == 1 {
						list = append(list, m.objs[k])
						keep[k] = m.objs[k]
					}
				}
				extra := pod("ns9", fmt.Sprintf("r%d", step), strconv.Itoa(step+1))
				list = append(list, extra)
				keep["ns9/"+extra.Name] = extra
				_ = ix.Replace(list, strconv.Itoa(step+1))
				m.objs = keep
				m.rv = strconv.Itoa(step + 1)
			case 4: // Bookmark, possibly older than the store's RV
				rv := strconv.Itoa(int(arg))
				ix.Bookmark(rv)
				m.observe(rv)
			case 5: // AddIndexers: tier once; again is a conflict
				err := ix.AddIndexers(toolscache.Indexers{tierLabel: modelLabelIndex(tierLabel)})
				if m.indexed[tierLabel] {
					if err == nil || !strings.Contains(err.Error(), "indexer conflict") {
						t.Fatalf("step %d: second AddIndexers: %v, want a conflict", step, err)
					}
					break
				}
				badTier := false
				for _, p := range m.objs {
					badTier = badTier || p.Labels[tierLabel] == badLabelValue
				}
				if badTier != (err != nil) {
					t.Fatalf("step %d: AddIndexers error %v, want one: %v", step, err, badTier)
				}
				m.indexed[tierLabel] = true
			}
			m.check(t, ix, step)
		}
	})
}
