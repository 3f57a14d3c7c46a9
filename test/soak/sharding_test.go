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

package soak

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
	dcache "github.com/deltacache/deltacache/pkg/cache"
	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/shard"
)

// The soak runs several sharded replicas of the cache on the one control plane, as the
// replicas of one operator: Pods and Apps sharded by namespace (an App and its Pods
// stay together), ConfigMaps by uid, each replica with the consistency check on.
// Together they must hold every object once, each exactly its share.

const (
	// ringNamespace holds the replicas' Leases; ringName names their ring.
	ringNamespace = "soak-ring"
	ringName      = "soak"
	// leaseDuration of the ring: the kube-apiserver restarts (about 20 s away) and the
	// longest blackholes of a 10-minute run outlast it, so replicas fence themselves
	// (serve nothing) and take their shares again, handing objects over.
	leaseDuration = 15 * time.Second
	renewInterval = 2 * time.Second
)

// replica is one sharded cache of the soak and what it watches.
type replica struct {
	id        string
	cache     *dcache.Cache
	informers []*watched
	// instance names this cache among those built for id (restarts): "replica-1#4".
	instance string
	// dir is its snapshot directory (one per id, kept across restarts).
	dir string
	// abrupt: a restart kills it (KeepLeaseOnStop, no write at stop) instead of
	// stopping it gracefully.
	abrupt  bool
	stop    context.CancelFunc
	done    chan error // Start's result
	started time.Time

	mu sync.Mutex
	// releasedAt is when it last gave up each slot (a hand-off, or the fence), as
	// followRing saw it: objects of a slot given up leave its store without a Delete
	// to its handlers, so their last event may be older than the server's state.
	releasedAt [shard.NumSlots]time.Time
	// acquiredAt is when it last started serving each slot, as followRing saw it.
	acquiredAt [shard.NumSlots]time.Time
	// stoppedAt is when a restart began to stop it.
	stoppedAt time.Time
}

// replicaIDs names n replicas.
func replicaIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("replica-%d", i)
	}
	return ids
}

// soakNamespaces returns the namespaces the writers spread the objects over:
// "soak-0", "soak-1", ... until each replica (shard.Assign over ids) owns at least two
// of them, at least six in all; with one replica, six.
func soakNamespaces(ids []string) []string {
	owners := shard.Assign(ids)
	owned := map[string]int{}
	var out []string
	enough := func() bool {
		for _, id := range ids {
			if owned[id] < 2 {
				return false
			}
		}
		return len(out) >= 6
	}
	for i := 0; !enough(); i++ {
		ns := fmt.Sprintf("soak-%d", i)
		out = append(out, ns)
		for id, slots := range owners {
			if slots.Has(shard.SlotOfNamespace(ns)) {
				owned[id]++
			}
		}
	}
	return out
}

// newReplica builds replica id's cache (named instance) on the proxied config: the
// label index "app", a field index on Pods' spec.nodeName, sharding (its ring logging to
// the test log), the consistency check (its drift given to onDrift) and snapshots in dir
// every snapshotInterval; abrupt keeps its Lease when it stops (a kill).
func newReplica(ctx context.Context, t *testing.T, cp *controlPlane, st settings, id, instance, dir string,
	abrupt bool, onDrift func(kind string, keys []string),
) *replica {
	t.Helper()
	opts := append([]dcache.Option{dcache.WithLabelIndexes("app"),
		dcache.WithConsistencyCheck(st.checkInterval),
		dcache.WithSnapshots(dir), dcache.WithSnapshotInterval(snapshotInterval),
		dcache.WithSharding(dcache.Sharding{
			Ring: shard.Options{Namespace: ringNamespace, Name: ringName, Identity: id,
				LeaseDuration: leaseDuration, RenewInterval: renewInterval, KeepLeaseOnStop: abrupt,
				Logger: ringLogger(t, instance)},
			ByUID:       []client.Object{&corev1.ConfigMap{}},
			ByNamespace: []client.Object{&corev1.Pod{}, &demov1alpha1.App{}},
		})}, replicaLogOptions(t, id, instance, onDrift)...)
	cc, err := dcache.NewWith(opts...)(cp.proxied, crcache.Options{Scheme: cp.scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := cc.(*dcache.Cache)
	if err := c.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		t.Fatal(err)
	}
	return &replica{id: id, instance: instance, cache: c, dir: dir, abrupt: abrupt}
}

// followRing records when r gives up and starts serving slots, until ctx ends. It
// reads the ring's status at every change (a slot given up and taken again is at least
// one renewal apart), so a time it records is at or a little after the moment.
func (r *replica) followRing(ctx context.Context) {
	ring := r.cache.Ring()
	var prev shard.Slots
	for {
		changed := ring.Changed()
		serving := ring.Status().Serving
		if gone, gained := prev.Minus(serving), serving.Minus(prev); !gone.IsEmpty() || !gained.IsEmpty() {
			now := time.Now()
			r.mu.Lock()
			for slot := range shard.NumSlots {
				switch {
				case gone.Has(slot):
					r.releasedAt[slot] = now
				case gained.Has(slot):
					r.acquiredAt[slot] = now
				}
			}
			r.mu.Unlock()
		}
		prev = serving
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// slotState describes, for a report line, r's hold of slot at the moment st (its
// ring's status then) was read: whether the ring served the slot, since when or since
// when not, when it last renewed its Lease, and whether w's informer selects the shard
// hash h now.
func (r *replica) slotState(st shard.Status, w *watched, slot int, h uint64) string {
	r.mu.Lock()
	acquired, released := r.acquiredAt[slot], r.releasedAt[slot]
	r.mu.Unlock()
	clock := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.Format("15:04:05.000")
	}
	ring := fmt.Sprintf("ring not serving it (gave it up at %s)", clock(released))
	if st.Serving.Has(slot) {
		ring = fmt.Sprintf("ring serving it (since %s)", clock(acquired))
	}
	sel := "its informer's selector admits it"
	if cur := w.inf.ShardSelector(); cur != nil && !cur.ContainsHash(h) {
		sel = "its informer's selector does not admit it"
	}
	return fmt.Sprintf("%s: %s, Lease renewed at %s, claims it %t, members %v; %s", r.instance, ring,
		clock(st.LastRenew), st.Claimed.Has(slot), st.Members, sel)
}

// shardHash is the hash the shard selector of gvk's informers reads of an object in
// namespace ns with uid.
func shardHash(gvk schema.GroupVersionKind, ns string, uid types.UID) uint64 {
	if gvk == cmGVK {
		return informer.ShardHash(string(uid))
	}
	return informer.ShardHash(ns)
}

// gaveUpAfter reports whether r gave up slot after t.
func (r *replica) gaveUpAfter(slot int, t time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.releasedAt[slot].After(t)
}

// slotOf is the slot of an object of gvk in namespace ns with uid: ConfigMaps are
// sharded by uid, Pods and Apps by namespace.
func slotOf(gvk schema.GroupVersionKind, ns string, uid types.UID) int {
	if gvk == cmGVK {
		return shard.SlotOfUID(string(uid))
	}
	return shard.SlotOfNamespace(ns)
}

// serverObject is an object of a consistent LIST.
type serverObject struct {
	uid     types.UID
	version string // uid@resourceVersion
}

// storeVersions returns the objects of w's store, key → uid@rv.
func storeVersions(w *watched) map[string]string {
	out := map[string]string{}
	for _, o := range w.inf.GetStore().List() {
		m, err := meta.Accessor(o)
		if err != nil {
			continue
		}
		out[m.GetNamespace()+"/"+m.GetName()] = string(m.GetUID()) + "@" + m.GetResourceVersion()
	}
	return out
}

// compareShares compares the replicas' informers of spec (the index of an informer in
// each replica's list) with the server's objects of its kind: the ring settled on
// shard.Assign of the replicas; every object held by exactly the replica serving its
// slot, at the server's version; nothing else held; and each replica's recording
// handler showing the server's state of every object of its share, with no event after
// the Delete of the same uid, and no object it may still be told about (its slot never
// given up) left without its Delete.
func compareShares(replicas []*replica, spec int, server map[string]serverObject) []string {
	var diffs []string
	gvk := replicas[0].informers[spec].gvk
	holders := map[string][]string{}
	for _, r := range replicas {
		w := r.informers[spec]
		serving := r.cache.Ring().Status().Serving
		mine := func(key string, uid types.UID) bool {
			ns, _, _ := strings.Cut(key, "/")
			return serving.Has(slotOf(gvk, ns, uid))
		}
		for key, version := range storeVersions(w) {
			holders[key] = append(holders[key], r.id)
			s, onServer := server[key]
			switch {
			case !onServer:
				diffs = append(diffs, fmt.Sprintf("%s store %s: %q, not on the server", r.id, key, version))
			case s.version != version:
				diffs = append(diffs, fmt.Sprintf("%s store %s: %q, server %q", r.id, key, version, s.version))
			case !mine(key, s.uid):
				diffs = append(diffs, fmt.Sprintf("%s store %s: held, its slot not served", r.id, key))
			}
		}
		seen := w.rec.keys()
		for key, s := range server {
			if !mine(key, s.uid) {
				continue
			}
			seq := seen[key]
			if len(seq) == 0 {
				diffs = append(diffs, fmt.Sprintf("%s handler %s: never seen", r.id, key))
				continue
			}
			if last := seq[len(seq)-1]; last.typ == "delete" || last.uid+"@"+last.rv != s.version {
				diffs = append(diffs, fmt.Sprintf("%s handler %s: last %v, server %q", r.id, key, last, s.version))
			}
		}
		for key, seq := range seen {
			last := seq[len(seq)-1]
			deleted := map[string]bool{}
			for _, e := range seq {
				if deleted[e.uid] && e.typ != "delete" {
					diffs = append(diffs, fmt.Sprintf("%s handler %s: %v after the delete of uid %s", r.id, key, e, e.uid))
					break
				}
				if e.typ == "delete" {
					deleted[e.uid] = true
				}
			}
			s, onServer := server[key]
			if last.typ == "delete" || (onServer && string(s.uid) == last.uid && mine(key, s.uid)) {
				continue // a Delete, or checked above
			}
			// The object the handler saw last is gone, or another replica's: excused only if
			// its slot left this replica since (a hand-off is not a deletion).
			ns, _, _ := strings.Cut(key, "/")
			slot := slotOf(gvk, ns, types.UID(last.uid))
			if serving.Has(slot) && !r.gaveUpAfter(slot, last.at) {
				diffs = append(diffs, fmt.Sprintf("%s handler %s: last %v, server %q; its slot was not given up since",
					r.id, key, last, s.version))
			}
		}
	}
	for key := range server {
		if n := len(holders[key]); n != 1 {
			diffs = append(diffs, fmt.Sprintf("%s held by %d replicas %v, want one", key, n, holders[key]))
		}
	}
	slices.Sort(diffs)
	return diffs
}

// ringDiffs reports replicas that do not serve their shard.Assign share.
func ringDiffs(replicas []*replica) []string {
	var ids []string
	for _, r := range replicas {
		ids = append(ids, r.id)
	}
	want := shard.Assign(ids)
	var diffs []string
	for _, r := range replicas {
		if st := r.cache.Ring().Status(); st.Serving != want[r.id] {
			diffs = append(diffs, fmt.Sprintf("%s serves %d slots, its share is %d (members %v)", r.id,
				st.Serving.Len(), want[r.id].Len(), st.Members))
		}
	}
	return diffs
}

// handOffs sums the slots the replicas started serving and gave up during the run.
func handOffs(replicas []*replica) (acquired, released int) {
	for _, r := range replicas {
		st := r.cache.Ring().Status()
		acquired += st.Acquired
		released += st.Released
	}
	return acquired, released
}

// The writers' namespaces give every replica some of the namespace-sharded objects.
func TestSoakNamespacesGiveEveryReplicaTwo(t *testing.T) {
	for n := 1; n <= 4; n++ {
		ids := replicaIDs(n)
		namespaces := soakNamespaces(ids)
		owners := shard.Assign(ids)
		for _, id := range ids {
			owned := 0
			for _, ns := range namespaces {
				if owners[id].Has(shard.SlotOfNamespace(ns)) {
					owned++
				}
			}
			if owned < 2 {
				t.Errorf("%d replicas: %s owns %d of %v, want at least 2", n, id, owned, namespaces)
			}
		}
		if len(namespaces) < 6 {
			t.Errorf("%d replicas: %d namespaces, want at least 6", n, len(namespaces))
		}
		t.Logf("%d replicas: %v", n, namespaces)
	}
}
