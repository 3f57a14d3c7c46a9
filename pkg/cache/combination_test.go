/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package cache_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/deltacache/deltacache/internal/testenv"
	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// TestCombination is the combination suite of issue #22: the cache's behaviour cases
// (create, update, delete, delete and re-create, Get and List by label and field,
// read-your-writes through controller-runtime's EnableReadYourWritesConsistency
// client, a relist, the handler's sequence of events, the objects handed out compared
// with controller-runtime's, and the drift check's verdict) in every cell of
// storage (compact, decoded) × sharding (none, by uid, by namespace) × drift check
// (off, on) × shape (typed, unstructured, metadata-only), pairwise (comboCells: 9
// cells covering every pair of values; COMBINATION_CELLS=all runs all 36).
//
// Each cell runs on the shared control plane with Pods of its own (a label of its run;
// resource quantities in their spec), deltacache's cache configured as the cell says,
// and controller-runtime's cache (cache.New, managedFields stripped as deltacache
// does) of the same Pods. deltacache's cache also holds 4,500 ConfigMaps the cells
// share, so that its relist is larger than a pop batch: the relist case checks that a
// reader and a handler never see it half applied (combination_relist_test.go). A sharded cell's replica serves part of the slots: a
// phantom ring member's Lease claims the rest, so the cache must hold exactly its
// share (the Pods whose uid, or namespace, falls in its slots), and the comparisons
// with controller-runtime's cache are made on the objects of that share. No cell is
// refused at construction today; one that were would fail with NewWith's error.
func TestCombination(t *testing.T) {
	requireEnv(t)
	parent := t
	for _, cell := range comboCells() {
		t.Run(cell.String(), func(t *testing.T) {
			start := time.Now()
			before := comboSeries(t, cell.shape)
			w := newComboWorld(t, parent, cell)
			for _, c := range comboCases() {
				t.Run(c.name, func(t *testing.T) { c.run(t, w) })
			}
			if cell.drift {
				t.Run("consistency check", func(t *testing.T) { comboDriftCheck(t, cell.shape, before) })
			}
			if t.Failed() { // what deltacache logged about the cell's drift and errors
				lines := w.logs.Matching("drift")
				for _, l := range w.logs.All() {
					if strings.Contains(l, "rror") {
						lines = append(lines, l)
					}
				}
				for _, l := range lines[max(0, len(lines)-20):] {
					t.Log(l)
				}
			}
			t.Logf("cell %s: %v", cell, time.Since(start).Round(10*time.Millisecond))
		})
	}
}

// comboCase is one behaviour case; the cases of a cell run in order on its world.
type comboCase struct {
	name string
	run  func(t *testing.T, w *comboWorld)
}

func comboCases() []comboCase {
	return []comboCase{
		{"create", comboCreate},
		{"update", comboUpdate},
		{"delete", comboDelete},
		{"delete and re-create", comboRecreate},
		{"Get and List by label and field", comboReads},
		{"read-your-writes", comboReadYourWrites},
		{"relist", comboRelist},
		{"handler sequences", comboHandlerSequences},
		{"handler objects equal controller-runtime's", comboHandedObjects},
	}
}

// comboCreate creates a Pod in each namespace.
func comboCreate(t *testing.T, w *comboWorld) {
	w.createPod(t, w.served, nil)
	w.createPod(t, w.other, nil)
	w.awaitConverged(t, "after the creates")
}

// comboUpdate changes a Pod of the share twice (a label and an annotation, the
// indexed values) and one of the other namespace once.
func comboUpdate(t *testing.T, w *comboWorld) {
	p := w.liveInShare(t)[0]
	w.patchPod(t, &p, "back", "o2")
	w.patchPod(t, &p, "front", "o1")
	for _, q := range w.serverPods(t) {
		if q.Namespace == w.other {
			w.patchPod(t, &q, "front", "o2")
			break
		}
	}
	w.awaitConverged(t, "after the updates")
}

// comboDelete deletes a Pod of the share; a Get of its key then says it is gone.
func comboDelete(t *testing.T, w *comboWorld) {
	p := w.liveInShare(t)[1]
	w.deletePod(t, &p, nil)
	w.awaitConverged(t, "after the delete")
	w.expectAbsent(t, client.ObjectKeyFromObject(&p))
}

// comboRecreate deletes a Pod of the share and creates one of the same name at once;
// the cache holds the new one if its uid is in the share, and a Get says which.
func comboRecreate(t *testing.T, w *comboWorld) {
	old := w.liveInShare(t)[2]
	w.deletePod(t, &old, nil)
	p := w.newComboPod(old.Namespace)
	p.Name = old.Name
	if err := k8sClient.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	w.history.wrote(p)
	w.awaitConverged(t, "after the delete and re-create")
	got := w.example()
	err := w.ours.Get(envCtx(t), client.ObjectKeyFromObject(p), got)
	switch {
	case w.inShare(old.Namespace+"/"+old.Name, p.UID):
		if err != nil || got.GetUID() != p.UID {
			t.Errorf("Get after the re-create: uid %s, %v; want the new uid %s", got.GetUID(), err, p.UID)
		}
	case !errors.Is(err, dcache.ErrNotInShard):
		t.Errorf("Get after the re-create, the new uid outside the share: %v, want ErrNotInShard", err)
	}
}

// expectAbsent checks deltacache's Get of key, whose object the server does not have,
// and controller-runtime's: NotFound where the replica could hold the key (not
// sharded, or sharded by namespace and the namespace served); ErrNotInShard in a
// namespace another replica serves; under uid sharding, where the key alone cannot
// tell whether the uid would be served, either.
func (w *comboWorld) expectAbsent(t *testing.T, key client.ObjectKey) {
	t.Helper()
	ctx := envCtx(t)
	if err := w.theirs.Get(ctx, key, w.example()); !apierrors.IsNotFound(err) {
		t.Errorf("controller-runtime's Get of the absent %s: %v, want NotFound", key, err)
	}
	err := w.ours.Get(ctx, key, w.example())
	notFound := apierrors.IsNotFound(err) && !errors.Is(err, dcache.ErrNotInShard)
	switch {
	case w.cell.sharding == shardingUID:
		if !notFound && !errors.Is(err, dcache.ErrNotInShard) {
			t.Errorf("Get of the absent %s: %v, want NotFound or ErrNotInShard", key, err)
		}
		t.Logf("Get of the absent %s under uid sharding: %v", key, err)
	case w.cell.sharding == shardingNamespace && key.Namespace != w.served:
		if !errors.Is(err, dcache.ErrNotInShard) {
			t.Errorf("Get of the absent %s, in a namespace another replica serves: %v, want ErrNotInShard", key, err)
		}
	case !notFound:
		t.Errorf("Get of the absent %s, which this replica would hold: %v, want NotFound (and not ErrNotInShard)",
			key, err)
	}
}

// comboReads compares Get of every Pod and List by label, by field and by namespace
// with the server's share and with controller-runtime's objects (reflect.DeepEqual);
// Gets of keys absent or outside the share answer as expectAbsent says.
func comboReads(t *testing.T, w *comboWorld) {
	ctx := envCtx(t)
	// Each query below matches a Pod of the share in the served namespace.
	live := w.liveInShare(t)
	w.patchPod(t, &live[0], "back", "o1")
	w.patchPod(t, &live[1], "front", "o2")
	w.awaitConverged(t, "before the reads")
	all, share := w.serverState(t)
	for _, key := range slices.Sorted(maps.Keys(all)) {
		ns, name, _ := strings.Cut(key, "/")
		k := client.ObjectKey{Namespace: ns, Name: name}
		ours, theirs := w.example(), w.example()
		if err := w.theirs.Get(ctx, k, theirs); err != nil {
			t.Fatalf("controller-runtime's Get of %s: %v", key, err)
		}
		err := w.ours.Get(ctx, k, ours)
		if _, in := share[key]; !in {
			if !errors.Is(err, dcache.ErrNotInShard) {
				t.Errorf("Get of %s, outside the share: %v, want ErrNotInShard", key, err)
			}
			continue
		}
		switch {
		case err != nil:
			t.Errorf("Get of %s: %v", key, err)
		case comboUIDRV(ours) != share[key]:
			t.Errorf("Get of %s: %s, server %s", key, comboUIDRV(ours), share[key])
		case !reflect.DeepEqual(ours, theirs):
			t.Errorf("Get of %s differs from controller-runtime's: %s", key, comboObjectDiff(ours, theirs))
		}
	}
	w.expectAbsent(t, client.ObjectKey{Namespace: w.served, Name: "never-created"})
	w.expectAbsent(t, client.ObjectKey{Namespace: w.other, Name: "never-created"})

	for _, q := range []struct {
		what   string
		labels labels.Set
		opts   []client.ListOption
		keep   func(o client.Object) bool
	}{
		{"label tier=front", labels.Set{comboTierLabel: "front"}, nil,
			func(o client.Object) bool { return o.GetLabels()[comboTierLabel] == "front" }},
		{"field owner=o1", nil, []client.ListOption{client.MatchingFields{comboOwnerIdx: "o1"}},
			func(o client.Object) bool { return o.GetAnnotations()[comboOwner] == "o1" }},
		{"namespace " + w.served + " and label tier=back", labels.Set{comboTierLabel: "back"},
			[]client.ListOption{client.InNamespace(w.served)},
			func(o client.Object) bool {
				return o.GetNamespace() == w.served && o.GetLabels()[comboTierLabel] == "back"
			}},
	} {
		ours, err := w.listed(ctx, w.ours, q.labels, q.opts...)
		if err != nil {
			t.Fatalf("List by %s: %v", q.what, err)
		}
		theirs, err := w.listed(ctx, w.theirs, q.labels, q.opts...)
		if err != nil {
			t.Fatalf("controller-runtime's List by %s: %v", q.what, err)
		}
		everything, err := w.listed(ctx, w.theirs, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		for key, o := range everything {
			if _, in := share[key]; in && q.keep(o) {
				want[key] = share[key]
			}
		}
		if got := comboVersions(ours); !maps.Equal(got, want) {
			t.Errorf("List by %s: %s", q.what, comboMapDiff(got, want))
		}
		if len(want) == 0 {
			t.Errorf("List by %s: the share has no such Pod; the case cannot fail", q.what)
		}
		for key, o := range ours {
			if th, ok := theirs[key]; !ok || !reflect.DeepEqual(o, th) {
				t.Errorf("List by %s: item %s differs from controller-runtime's: %s", q.what, key, comboObjectDiff(o, th))
			}
		}
	}
}

// comboReadYourWrites reads through controller-runtime's client with
// EnableReadYourWritesConsistency over deltacache's cache: a Get and a List right
// after an update return the version written; after a burst of creates and deletes of
// the same objects, Gets and a List return within their deadline (the client waits
// until the informer's handler has seen each delete) without them. The burst is made
// while the cell's recording handler is held busy, so that its notifications of each
// object wait in its queue together (handler sequences checks it was told of every
// delete). Writes go to
// objects of the share only where the client would otherwise wait for an event the
// replica never receives (under uid sharding the share of a new object is known after
// its create, so creates go through the direct client there).
func comboReadYourWrites(t *testing.T, w *comboWorld) {
	ctx := envCtx(t)
	ryw, err := client.New(cfg, client.Options{Scheme: scheme.Scheme, Mapper: mapper, HTTPClient: httpClient,
		Cache: &client.CacheOptions{Reader: w.ours, Unstructured: true, EnableReadYourWritesConsistency: new(true)}})
	if err != nil {
		t.Fatal(err)
	}
	bounded := func(f func(ctx context.Context) error) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return f(ctx)
	}

	target := w.liveInShare(t)[0]
	written := w.rywUpdate(t, ryw, &target)
	got := w.example()
	err = bounded(func(ctx context.Context) error { return ryw.Get(ctx, client.ObjectKeyFromObject(written), got) })
	var listed map[string]client.Object
	listErr := bounded(func(ctx context.Context) (err error) { listed, err = w.listed(ctx, ryw, nil); return err })
	listedRV := ""
	if o := listed[target.Namespace+"/"+target.Name]; o != nil {
		listedRV = o.GetResourceVersion()
	}
	switch {
	case w.cell.shape == shapeUnstructured:
		// controller-runtime v0.25.2 files a Create, Update or Patch of an
		// *unstructured.Unstructured under the typed representation (client/consistency.go,
		// writeTargetFor: `case Object`), so unstructured reads do not wait for it, on any
		// cache: nothing to assert here; the deletes below are filed right.
		t.Logf("unstructured Get and List right after an unstructured Update (not awaited upstream): rv %q and %q, written %q",
			got.GetResourceVersion(), listedRV, written.GetResourceVersion())
	case err != nil || got.GetResourceVersion() != written.GetResourceVersion():
		t.Errorf("Get right after the update: rv %q, %v; want rv %q", got.GetResourceVersion(), err,
			written.GetResourceVersion())
	case listErr != nil || listedRV != written.GetResourceVersion():
		t.Errorf("List right after the update: %s at rv %q, %v; want rv %q", target.Name, listedRV, listErr,
			written.GetResourceVersion())
	}

	// The burst, while deltacache's recording handler is busy: its notifications of
	// each object (an add, then a delete) are queued together.
	var gone []client.Object
	w.ourRec.hold()
	held := true
	defer func() {
		if held {
			w.ourRec.release()
		}
	}()
	busy := w.liveInShare(t)[1] // an update the handler is held on, so that what follows queues
	w.patchPod(t, &busy, busy.Labels[comboTierLabel], "o2")
	eventually(t, comboWait, func() error {
		if w.ourRec.waiting.Load() == 0 {
			return errors.New("the recording handler has not been called yet")
		}
		return nil
	})
	for range 4 {
		obj := w.rywCreate(t, ryw)
		if w.inShare(obj.GetNamespace()+"/"+obj.GetName(), obj.GetUID()) {
			if err := ryw.Delete(ctx, w.shaped(obj), client.GracePeriodSeconds(0)); err != nil {
				t.Fatal(err)
			}
			w.history.deleted(obj.GetUID())
		} else {
			w.deletePod(t, obj, nil)
		}
		gone = append(gone, obj)
	}
	eventually(t, comboWait, func() error { // the deletes are in the store, the handler notified
		for _, obj := range gone {
			if _, exists, _ := w.ourInf.GetStore().GetByKey(obj.GetNamespace() + "/" + obj.GetName()); exists {
				return fmt.Errorf("%s still in deltacache's store", obj.GetName())
			}
		}
		return nil
	})
	w.ourRec.release()
	held = false
	for _, obj := range gone {
		key := client.ObjectKeyFromObject(obj)
		err := bounded(func(ctx context.Context) error { return ryw.Get(ctx, key, w.example()) })
		notFound := apierrors.IsNotFound(err) ||
			(w.cell.sharding == shardingUID && errors.Is(err, dcache.ErrNotInShard))
		if !notFound {
			t.Errorf("Get of %s, created and deleted through the client: %v, want NotFound", key, err)
		}
	}
	if err := bounded(func(ctx context.Context) (err error) { listed, err = w.listed(ctx, ryw, nil); return err }); err != nil {
		t.Errorf("List after the creates and deletes: %v", err)
	}
	for _, obj := range gone {
		if o, ok := listed[obj.GetNamespace()+"/"+obj.GetName()]; ok {
			t.Errorf("List after the deletes returned %s (%s)", obj.GetName(), comboUIDRV(o))
		}
	}
	w.awaitConverged(t, "after the writes through the read-your-writes client")
}

// rywUpdate sets a label on p through ryw, in the cell's shape (typed and unstructured:
// Update; metadata-only: a merge Patch), and returns the object written.
func (w *comboWorld) rywUpdate(t *testing.T, ryw client.Client, p *corev1.Pod) client.Object {
	t.Helper()
	ctx := envCtx(t)
	key := client.ObjectKeyFromObject(p)
	obj := w.example()
	if err := k8sClient.Get(ctx, key, obj); err != nil { // the direct client: the server's version
		t.Fatal(err)
	}
	before := obj.DeepCopyObject().(client.Object)
	labels := obj.GetLabels()
	labels["written"] = "through-ryw"
	obj.SetLabels(labels)
	var err error
	if w.cell.shape == shapeMetadata {
		err = ryw.Patch(ctx, obj, client.MergeFrom(before))
	} else {
		err = ryw.Update(ctx, obj)
	}
	if err != nil {
		t.Fatalf("writing %s through the read-your-writes client: %v", key, err)
	}
	w.history.wrote(obj)
	return obj
}

// rywCreate creates a Pod in the served namespace: through ryw in the typed and
// unstructured shapes (a metadata-only object cannot be created), except under uid
// sharding (see comboReadYourWrites); through the direct client otherwise.
func (w *comboWorld) rywCreate(t *testing.T, ryw client.Client) client.Object {
	t.Helper()
	if w.cell.shape == shapeMetadata || w.cell.sharding == shardingUID {
		return w.createPod(t, w.served, nil)
	}
	p := w.newComboPod(w.served)
	var obj client.Object = p
	if w.cell.shape == shapeUnstructured {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: content}
		u.SetGroupVersionKind(gvkPod)
		obj = u
	}
	if err := ryw.Create(envCtx(t), obj); err != nil {
		t.Fatalf("creating %s through the read-your-writes client: %v", p.Name, err)
	}
	w.history.wrote(obj)
	return obj
}

// shaped returns obj's identity (namespace, name, uid) in the cell's shape.
func (w *comboWorld) shaped(obj client.Object) client.Object {
	out := w.example()
	out.SetNamespace(obj.GetNamespace())
	out.SetName(obj.GetName())
	out.SetUID(obj.GetUID())
	return out
}

// comboRelist makes deltacache's informers relist (their watches cut, the requests
// held, then the resume answered 410 Expired) after a Pod was updated, one deleted and
// one created, and the bulk's probe replaced, meanwhile: the relist of the bulk is
// published whole (comboRelistBulk), and the cache and its handler then show the
// server's state.
func comboRelist(t *testing.T, w *comboWorld) {
	before, _ := w.ourInf.LastListSummary()
	beforeCMs, _ := w.cmInf.LastListSummary()
	live := w.liveInShare(t)
	comboRelistBulk(t, w, func() {
		w.patchPod(t, &live[0], "back", "o1")
		w.deletePod(t, &live[1], nil)
		w.createPod(t, w.served, nil)
	})
	eventually(t, comboWait, func() error {
		if st, _ := w.ourInf.LastListSummary(); st.ResourceVersion == before.ResourceVersion {
			return fmt.Errorf("no list of Pods since the one at resourceVersion %s", before.ResourceVersion)
		}
		if st, _ := w.cmInf.LastListSummary(); st.ResourceVersion == beforeCMs.ResourceVersion || st.Objects < 2 {
			return fmt.Errorf("no list of the bulk since the one at resourceVersion %s (last %+v)",
				beforeCMs.ResourceVersion, st)
		}
		return nil
	})
	w.awaitConverged(t, "after the relist")
}

// comboHandlerSequences checks each handler's events against the server's writes (see
// comboCheckHandlerSequences): controller-runtime's too, as a check of the checker.
func comboHandlerSequences(t *testing.T, w *comboWorld) {
	w.awaitConverged(t, "before the check")
	all, share := w.serverState(t)
	lives := w.history.snapshot()
	for _, d := range comboCheckHandlerSequences(w.ourRec.events(), lives, w.inShare, share) {
		t.Errorf("deltacache's handler: %s", d)
	}
	everything := func(_ string, _ types.UID) bool { return true }
	for _, d := range comboCheckHandlerSequences(w.theirRec.events(), lives, everything, all) {
		t.Errorf("controller-runtime's handler: %s", d)
	}
}

// comboHandedObjects compares every object deltacache's handler was handed (add,
// update old and new, delete) with the object controller-runtime's handler was handed
// for the same uid and resourceVersion, by reflect.DeepEqual.
func comboHandedObjects(t *testing.T, w *comboWorld) {
	diffs, compared := comboCompareHanded(w.ourRec.objects(), w.theirRec.objects())
	for _, d := range diffs {
		t.Error(d)
	}
	t.Logf("objects compared: %v", compared)
	for _, as := range []string{"add", "update-old", "update-new", "delete"} {
		if compared[as] == 0 {
			t.Errorf("no %s object compared; the case cannot fail", as)
		}
	}
}

// comboSeries returns the informer series of the cell's shape, Pods' and ConfigMaps'
// added up.
func comboSeries(t *testing.T, shape comboShape) map[string]float64 {
	out := map[string]float64{}
	for _, kind := range []string{"Pod", "ConfigMap"} {
		labels := map[string]string{"group": "", "version": "v1", "kind": kind, "shape": string(shape)}
		for name, v := range testenv.Series(t, metrics.Registry, labels) {
			out[name] += v
		}
	}
	return out
}

// comboDriftCheck checks the consistency check's series of the cell's informers (its
// Pods and the bulk ConfigMaps), from before the cache started: the checks ran, found
// no drift, and caused no relist (cause "drift"; a shard change's relist is "shard").
func comboDriftCheck(t *testing.T, shape comboShape, before map[string]float64) {
	const (
		ok      = "deltacache_consistency_checks_total{result=ok}"
		drifted = "deltacache_consistency_checks_total{result=drift}"
		failed  = "deltacache_consistency_checks_total{result=error}"
		relists = "deltacache_informer_relists_total{cause=drift}"
	)
	delta := func(s map[string]float64, name string) float64 { return s[name] - before[name] }
	var s map[string]float64
	eventually(t, 5*comboCheckInterval, func() error {
		s = comboSeries(t, shape)
		if n := delta(s, ok) + delta(s, drifted) + delta(s, failed); n < 4 {
			return fmt.Errorf("%v consistency checks ran, want at least 4 (two per informer)", n)
		}
		return nil
	})
	var objects float64
	for _, d := range []string{"missing", "extra", "stale"} {
		objects += delta(s, "deltacache_consistency_drift_objects_total{drift="+d+"}")
	}
	t.Logf("checks: %v ok, %v drift, %v error; drifted objects %v; relists for drift %v",
		delta(s, ok), delta(s, drifted), delta(s, failed), objects, delta(s, relists))
	if objects != 0 || delta(s, drifted) != 0 || delta(s, relists) != 0 {
		t.Errorf("the consistency check found %v drifted objects in %v checks and caused %v relists; want none",
			objects, delta(s, drifted), delta(s, relists))
	}
	if delta(s, ok) == 0 {
		t.Errorf("no consistency check passed")
	}
}
