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
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/deltacache/deltacache/internal/testenv"
	dcache "github.com/deltacache/deltacache/pkg/cache"
	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/shard"
)

// A cell's world: its namespaces and Pods on the shared control plane, deltacache's
// cache configured as the cell says, and controller-runtime's cache of the same Pods.

const (
	comboRunLabel  = "combo-run" // every Pod of a cell carries it, with the cell's run id
	comboTierLabel = "tier"      // front or back: the label the cases list by
	comboOwner     = "owner"     // an annotation, the field index's value
	comboOwnerIdx  = "metadata.annotations.owner"

	// The ring of a sharded cell: this replica, and a phantom member whose Lease (renewed
	// for an hour) claims its share, so that the replica serves part of the slots.
	comboReplica = "replica"
	comboPhantom = "phantom"

	comboCheckInterval = time.Second // WithConsistencyCheck of the cells with drift on
	comboRecorderDelay = 5 * time.Millisecond
	comboIndexDelay    = 2 * time.Millisecond
	comboWait          = 30 * time.Second
)

// comboServed is the slots the replica serves in every sharded cell.
var comboServed = shard.Assign([]string{comboReplica, comboPhantom})[comboReplica]

// comboWorld is one cell's world.
type comboWorld struct {
	cell comboCell
	run  string // the cell's run id: its Pods' comboRunLabel value
	sel  labels.Selector
	// served is a namespace whose Pods are in this replica's share (all of them,
	// unless sharded by uid); other one whose Pods are not, under namespace sharding.
	served, other string
	ring          string // the ring's name (sharded cells)

	bulk       *comboBulk
	probeWatch comboProbeWatch
	ours       *dcache.Cache
	transport  *comboTransport               // ours reaches the API server through it
	cmInf      *informer.SharedIndexInformer // ours, of the bulk ConfigMaps
	theirs     crcache.Cache                 // controller-runtime's
	ourRec     *comboRecorder
	theirRec   *comboRecorder
	ourInf     *informer.SharedIndexInformer
	history    *comboHistory
	seq        int               // names of new Pods
	logs       *testenv.LogLines // deltacache's log
}

// newComboWorld creates the cell's namespaces, Pods and (sharded) the phantom's Lease,
// and starts both caches with a recorder each, waiting until deltacache's serves its
// share.
func newComboWorld(t, parent *testing.T, cell comboCell) *comboWorld {
	t.Helper()
	requireEnv(t)
	w := &comboWorld{cell: cell, run: rand.String(6), history: newComboHistory(), bulk: requireComboBulk(t, parent)}
	w.sel = labels.SelectorFromSet(labels.Set{comboRunLabel: w.run})
	w.ring = "combo-" + w.run
	w.served, w.other = comboNamespaces(w.run)
	for _, ns := range []string{w.served, w.other} {
		w.createNamespace(t, ns)
	}
	if cell.sharding != shardingNone {
		w.createPhantomLease(t)
	}
	// Pods: at least 6 of the share in the served namespace (under uid sharding a
	// Pod's uid decides, so create until there are), and 3 in the other.
	for range 3 {
		w.createPod(t, w.other, nil)
	}
	for n := 0; len(w.liveInShare(t)) < 6; n++ {
		if n == 40 {
			t.Fatalf("40 Pods created, fewer than 6 of them in the share")
		}
		w.createPod(t, w.served, nil)
	}
	w.startOurs(t)
	w.startTheirs(t)
	w.awaitConverged(t, "after the start")
	return w
}

// comboNamespaces returns two namespace names of run: the first whose slot this
// replica serves (shard.SlotOfNamespace), and the first whose slot it does not.
func comboNamespaces(run string) (served, other string) {
	for i := 0; served == "" || other == ""; i++ {
		name := fmt.Sprintf("combo-%s-%d", run, i)
		switch in := comboServed.Has(shard.SlotOfNamespace(name)); {
		case in && served == "":
			served = name
		case !in && other == "":
			other = name
		}
	}
	return served, other
}

// createNamespace creates ns; when the test ends (after the caches stopped), its Pods
// are deleted (envtest runs no namespace controller: other tests cache every Pod), then
// ns.
func (w *comboWorld) createNamespace(t *testing.T, ns string) {
	t.Helper()
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	t.Cleanup(func() {
		ctx := context.Background()
		_ = k8sClient.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
		_ = k8sClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
}

// createPhantomLease writes the Lease of the ring's other member: unexpired for an
// hour and claiming exactly its share, so that this replica is granted the rest
// (comboServed) and nothing more.
func (w *comboWorld) createPhantomLease(t *testing.T) {
	t.Helper()
	slots := shard.Assign([]string{comboReplica, comboPhantom})[comboPhantom]
	create(t, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.served, Name: w.ring + "-" + comboPhantom,
			Labels:      map[string]string{shard.RingLabel: w.ring},
			Annotations: map[string]string{shard.SlotsAnnotation: slots.String()}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: new(comboPhantom), LeaseDurationSeconds: new(int32(3600)),
			RenewTime: &metav1.MicroTime{Time: time.Now()}},
	})
}

// newComboPod is a Pod of the cell in ns with resource quantities (requests, limits
// and an emptyDir sizeLimit: the protobuf codec caches a Quantity's string), tier
// front or back, and an owner annotation o1 or o2.
func (w *comboWorld) newComboPod(ns string) *corev1.Pod {
	w.seq++
	tier, owner := "front", "o1"
	if w.seq%2 == 0 {
		tier, owner = "back", "o2"
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p-%02d", w.seq),
			Labels:      map[string]string{comboRunLabel: w.run, comboTierLabel: tier},
			Annotations: map[string]string{comboOwner: owner}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"),
					corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
			}}},
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: new(resource.MustParse("64Mi"))}}}},
		},
	}
}

// createPod creates a new Pod of the cell in ns through c (the direct client when
// nil) and records it.
func (w *comboWorld) createPod(t *testing.T, ns string, c client.Client) *corev1.Pod {
	t.Helper()
	if c == nil {
		c = k8sClient
	}
	p := w.newComboPod(ns)
	if err := c.Create(context.Background(), p); err != nil {
		t.Fatalf("creating Pod %s/%s: %v", ns, p.Name, err)
	}
	w.history.wrote(p)
	return p
}

// deletePod deletes p (at once: no kubelet) through c (the direct client when nil) and
// records it.
func (w *comboWorld) deletePod(t *testing.T, p client.Object, c client.Client) {
	t.Helper()
	if c == nil {
		c = k8sClient
	}
	if err := c.Delete(context.Background(), p, client.GracePeriodSeconds(0)); err != nil {
		t.Fatalf("deleting Pod %s/%s: %v", p.GetNamespace(), p.GetName(), err)
	}
	w.history.deleted(p.GetUID())
}

// patchPod sets p's tier label and owner annotation on the server, and a "step"
// annotation so that every patch makes a new version (a merge patch through the direct
// client), and records the new version; p is updated.
func (w *comboWorld) patchPod(t *testing.T, p *corev1.Pod, tier, owner string) {
	t.Helper()
	before := p.DeepCopy()
	w.seq++
	p.Labels[comboTierLabel] = tier
	p.Annotations[comboOwner] = owner
	p.Annotations["step"] = strconv.Itoa(w.seq)
	if err := k8sClient.Patch(context.Background(), p, client.MergeFrom(before)); err != nil {
		t.Fatalf("patching Pod %s/%s: %v", p.Namespace, p.Name, err)
	}
	w.history.wrote(p)
}

// inShare reports whether this replica's cache may hold the Pod of key with uid.
func (w *comboWorld) inShare(key string, uid types.UID) bool {
	switch w.cell.sharding {
	case shardingUID:
		return comboServed.Has(shard.SlotOfUID(string(uid)))
	case shardingNamespace:
		ns, _, _ := strings.Cut(key, "/")
		return comboServed.Has(shard.SlotOfNamespace(ns))
	default:
		return true
	}
}

// serverPods lists the cell's Pods on the server (a consistent read).
func (w *comboWorld) serverPods(t *testing.T) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := k8sClient.List(context.Background(), &list, client.MatchingLabelsSelector{Selector: w.sel}); err != nil {
		t.Fatalf("listing the cell's Pods on the server: %v", err)
	}
	return list.Items
}

// liveInShare returns the cell's Pods on the server in the served namespace that are
// in the share, by name.
func (w *comboWorld) liveInShare(t *testing.T) []corev1.Pod {
	t.Helper()
	var out []corev1.Pod
	for _, p := range w.serverPods(t) {
		if p.Namespace == w.served && w.inShare(p.Namespace+"/"+p.Name, p.UID) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// serverState returns the cell's Pods on the server, key → uid@rv: all of them, and
// those of the share.
func (w *comboWorld) serverState(t *testing.T) (all, share map[string]string) {
	t.Helper()
	all, share = map[string]string{}, map[string]string{}
	for _, p := range w.serverPods(t) {
		key := p.Namespace + "/" + p.Name
		all[key] = string(p.UID) + "@" + p.ResourceVersion
		if w.inShare(key, p.UID) {
			share[key] = all[key]
		}
	}
	return all, share
}

// example returns an empty object of the cell's shape (the Go type handlers receive).
func (w *comboWorld) example() client.Object {
	switch w.cell.shape {
	case shapeUnstructured:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvkPod)
		return u
	case shapeMetadata:
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvkPod)
		return m
	default:
		return &corev1.Pod{}
	}
}

// newList returns an empty list of the cell's shape.
func (w *comboWorld) newList() client.ObjectList {
	switch w.cell.shape {
	case shapeUnstructured:
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		return l
	case shapeMetadata:
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		return l
	default:
		return &corev1.PodList{}
	}
}

// listed lists the cell's Pods from c that carry the labels lbls too (none: nil), with
// opts, key → object.
func (w *comboWorld) listed(ctx context.Context, c client.Reader, lbls labels.Set, opts ...client.ListOption,
) (map[string]client.Object, error) {
	list := w.newList()
	sel := labels.Merge(lbls, labels.Set{comboRunLabel: w.run})
	if err := c.List(ctx, list, append(opts, client.MatchingLabels(sel))...); err != nil {
		return nil, err
	}
	items, err := apimeta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := map[string]client.Object{}
	for _, item := range items {
		o := item.(client.Object)
		out[o.GetNamespace()+"/"+o.GetName()] = o
	}
	return out, nil
}

// comboVersions maps objects to their uid@rv.
func comboVersions(objs map[string]client.Object) map[string]string {
	out := make(map[string]string, len(objs))
	for k, o := range objs {
		out[k] = comboUIDRV(o)
	}
	return out
}

// comboOwnerIndex indexes a Pod (any shape) by its owner annotation; slow (comboIndexDelay)
// for deltacache's, so that events queue up before the store.
func comboOwnerIndex(delay time.Duration) client.IndexerFunc {
	return func(o client.Object) []string {
		time.Sleep(delay)
		return []string{o.GetAnnotations()[comboOwner]}
	}
}

// startOurs builds and starts deltacache's cache of the cell: its storage, sharding
// (by uid or namespace, the ring's Leases in the served namespace) and drift check, a
// label index on tier, the owner field index, and a slow recorder on the informer of
// the cell's shape; and the bulk ConfigMaps in that shape, with the probe index and
// the probe watch's handler. It reaches the API server through a comboTransport. A cell
// refused at construction fails here with NewWith's error.
func (w *comboWorld) startOurs(t *testing.T) {
	t.Helper()
	var log logr.Logger
	log, w.logs = testenv.CaptureLogs()
	options := []dcache.Option{dcache.WithStorage(w.cell.storage), dcache.WithLabelIndexes(comboTierLabel),
		dcache.WithLogger(log)}
	if w.cell.drift {
		options = append(options, dcache.WithConsistencyCheck(comboCheckInterval))
	}
	ring := shard.Options{Namespace: w.served, Name: w.ring, Identity: comboReplica, RenewInterval: time.Second}
	kinds := []client.Object{&corev1.Pod{}, &corev1.ConfigMap{}}
	switch w.cell.sharding {
	case shardingUID:
		options = append(options, dcache.WithSharding(dcache.Sharding{Ring: ring, ByUID: kinds}))
	case shardingNamespace:
		options = append(options, dcache.WithSharding(dcache.Sharding{Ring: ring, ByNamespace: kinds}))
	}
	w.transport = &comboTransport{}
	ecfg := rest.CopyConfig(cfg)
	ecfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { w.transport.next = rt; return w.transport }
	hc, err := rest.HTTPClientFor(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dcache.NewWith(options...)(ecfg, crcache.Options{HTTPClient: hc, Mapper: mapper,
		ByObject: map[client.Object]crcache.ByObject{
			&corev1.Pod{}:       {Label: w.sel},
			&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(labels.Set{comboBulkLabel: w.bulk.run})},
		}})
	if err != nil {
		t.Fatalf("cell %s refused at construction: %v", w.cell, err)
	}
	w.ours = c.(*dcache.Cache)
	ctx := envCtx(t)
	if err := w.ours.IndexField(ctx, w.example(), comboOwnerIdx, comboOwnerIndex(comboIndexDelay)); err != nil {
		t.Fatal(err)
	}
	inf, err := w.ours.GetInformer(ctx, w.example(), crcache.BlockUntilSynced(false))
	if err != nil {
		t.Fatal(err)
	}
	w.ourInf = inf.(*informer.SharedIndexInformer)
	w.ourRec = newComboRecorder(comboRecorderDelay)
	if _, err := inf.AddEventHandler(w.ourRec); err != nil {
		t.Fatal(err)
	}
	if err := w.ours.IndexField(ctx, w.configMapExample(), comboProbeIdx, comboProbeIndex); err != nil {
		t.Fatal(err)
	}
	cms, err := w.ours.GetInformer(ctx, w.configMapExample(), crcache.BlockUntilSynced(false))
	if err != nil {
		t.Fatal(err)
	}
	w.cmInf = cms.(*informer.SharedIndexInformer)
	if _, err := cms.AddEventHandler(w.probeWatch.handler(w)); err != nil {
		t.Fatal(err)
	}
	runCache(t, w.ours)
	if w.cell.sharding != shardingNone {
		eventually(t, comboWait, func() error {
			if st := w.ours.Ring().Status(); st.Serving != comboServed {
				return fmt.Errorf("the replica serves %d slots (members %v), want its %d", st.Serving.Len(),
					st.Members, comboServed.Len())
			}
			return nil
		})
	}
}

// startTheirs builds and starts controller-runtime's cache of the cell's Pods, with
// managedFields stripped as deltacache does, the same field index and a recorder.
func (w *comboWorld) startTheirs(t *testing.T) {
	t.Helper()
	c, err := crcache.New(cfg, crcache.Options{HTTPClient: httpClient, Mapper: mapper, Scheme: scheme.Scheme,
		DefaultTransform: crcache.TransformStripManagedFields(),
		ByObject:         map[client.Object]crcache.ByObject{&corev1.Pod{}: {Label: w.sel}}})
	if err != nil {
		t.Fatal(err)
	}
	w.theirs = c
	ctx := envCtx(t)
	if err := c.IndexField(ctx, w.example(), comboOwnerIdx, comboOwnerIndex(0)); err != nil {
		t.Fatal(err)
	}
	inf, err := c.GetInformer(ctx, w.example(), crcache.BlockUntilSynced(false))
	if err != nil {
		t.Fatal(err)
	}
	w.theirRec = newComboRecorder(0)
	if _, err := inf.AddEventHandler(w.theirRec); err != nil {
		t.Fatal(err)
	}
	runCache(t, c)
}

// converged returns nil when deltacache's cache holds exactly the share of the cell's
// Pods at the server's versions, controller-runtime's holds all of them, and each
// recorder's last event of every key shows the server's state.
func (w *comboWorld) converged(ctx context.Context, t *testing.T) error {
	all, share := w.serverState(t)
	ours, err := w.listed(ctx, w.ours, nil)
	if err != nil {
		return fmt.Errorf("deltacache List: %w", err)
	}
	if got := comboVersions(ours); !maps.Equal(got, share) {
		return fmt.Errorf("deltacache holds %s", comboMapDiff(got, share))
	}
	theirs, err := w.listed(ctx, w.theirs, nil)
	if err != nil {
		return fmt.Errorf("controller-runtime List: %w", err)
	}
	if got := comboVersions(theirs); !maps.Equal(got, all) {
		return fmt.Errorf("controller-runtime holds %s", comboMapDiff(got, all))
	}
	for name, rec := range map[string]*comboRecorder{"deltacache": w.ourRec, "controller-runtime": w.theirRec} {
		want := share
		if rec == w.theirRec {
			want = all
		}
		if d := comboLastEventDiff(rec.events(), want); d != "" {
			return fmt.Errorf("%s's handler: %s", name, d)
		}
	}
	return nil
}

// awaitConverged waits until converged.
func (w *comboWorld) awaitConverged(t *testing.T, what string) {
	t.Helper()
	ctx := envCtx(t)
	eventually(t, comboWait, func() error {
		if err := w.converged(ctx, t); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	})
}

// comboLastEventDiff describes the first key whose last event does not show want's state.
func comboLastEventDiff(events map[string][]comboEvent, want map[string]string) string {
	for _, key := range slices.Sorted(maps.Keys(want)) {
		seq := events[key]
		if len(seq) == 0 || seq[len(seq)-1].typ == "delete" ||
			string(seq[len(seq)-1].uid)+"@"+seq[len(seq)-1].rv != want[key] {
			return fmt.Sprintf("%s: events %v, server %s", key, seq, want[key])
		}
	}
	for _, key := range slices.Sorted(maps.Keys(events)) {
		if _, ok := want[key]; !ok && events[key][len(events[key])-1].typ != "delete" {
			return fmt.Sprintf("%s: events %v, gone from the server (or the share)", key, events[key])
		}
	}
	return ""
}

// comboMapDiff describes how got differs from want (key → uid@rv).
func comboMapDiff(got, want map[string]string) string {
	var d []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			d = append(d, fmt.Sprintf("%s %q (server %q)", k, got[k], want[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			d = append(d, fmt.Sprintf("%s %q (not on the server or not in the share)", k, got[k]))
		}
	}
	if len(d) > 5 {
		d = append(d[:5], fmt.Sprintf("and %d more", len(d)-5))
	}
	return fmt.Sprintf("%d objects, %d expected: %s", len(got), len(want), strings.Join(d, "; "))
}
