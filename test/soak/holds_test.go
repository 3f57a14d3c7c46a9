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
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/shard"
)

// What the soak watches while it runs, besides the final comparison: keys held by two
// replicas at once, reconciles of one key on two replicas at once, and each replica's
// memory.

// reconcileSpecs are the informers (indexes in watchAll's list) on which each replica
// runs a reconcile of the object's key: the typed Pods, ConfigMaps and Apps.
var reconcileSpecs = []int{0, 1, 2}

// reconcileSleep is how long a reconcile holds its key.
const reconcileSleep = 2 * time.Millisecond

// reconciles is a map shared by every replica's reconcile handlers: kind/namespace/name
// → the cache instance reconciling it now.
type reconciles struct {
	mu    sync.Mutex
	in    map[string]map[string]int // key → instance → reconciles in flight
	uids  map[string]string         // key@instance → uid of the object it reconciles
	calls atomic.Int64
	// overlaps are the entries of a key that another instance was reconciling.
	overlaps []overlap
	// instances are the caches whose handlers reconcile, by instance name.
	instances map[string]*replica
}

// overlap is a reconcile that entered a key another cache instance held.
type overlap struct {
	key, holder, entrant string
	slot                 int
	at                   time.Time
	// otherObject: the two reconcile objects of the same name with different uids (an
	// object deleted and re-created under its name: with ConfigMaps sharded by uid, the
	// new one is in another slot, most often another replica's).
	otherObject bool
	// handOff: the holder's or the entrant's replica gave up the key's slot within the
	// 30 s before the entry (or the second after), or was a cache a restart was
	// stopping: its handlers were still delivering notifications queued before.
	handOff bool
	// states are the holder's and the entrant's hold of the slot at the entry
	// (replica.slotState).
	states string
}

func newReconciles() *reconciles {
	return &reconciles{in: map[string]map[string]int{}, uids: map[string]string{}, instances: map[string]*replica{}}
}

// watch adds r's reconcile handler to its reconcileSpecs informers.
func (rc *reconciles) watch(t *testing.T, r *replica) {
	rc.mu.Lock()
	rc.instances[r.instance] = r
	rc.mu.Unlock()
	for _, i := range reconcileSpecs {
		w := r.informers[i]
		kind := w.gvk.Kind
		reconcile := func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			m, err := meta.Accessor(obj)
			if err != nil {
				return
			}
			rc.run(r, i, kind+"/"+m.GetNamespace()+"/"+m.GetName(), string(m.GetUID()),
				slotOf(w.gvk, m.GetNamespace(), m.GetUID()), shardHash(w.gvk, m.GetNamespace(), m.GetUID()))
		}
		h := toolscache.ResourceEventHandlerFuncs{
			AddFunc: reconcile, UpdateFunc: func(_, o any) { reconcile(o) }, DeleteFunc: reconcile,
		}
		if _, err := w.inf.AddEventHandler(h); err != nil {
			t.Fatal(err)
		}
	}
}

// run marks key (of r's informer spec, in slot, of shard hash h) as reconciled by r,
// sleeps, and unmarks it; an entry while another instance holds the key is an overlap.
func (rc *reconciles) run(r *replica, spec int, key, uid string, slot int, h uint64) {
	entered := time.Now()
	rc.calls.Add(1)
	rc.mu.Lock()
	holders := rc.in[key]
	if holders == nil {
		holders = map[string]int{}
		rc.in[key] = holders
	}
	for holder := range holders {
		if holder != r.instance {
			o := overlap{key: key, holder: holder, entrant: r.instance, slot: slot,
				at: entered, otherObject: rc.uids[key+"@"+holder] != uid}
			if hr := rc.instances[holder]; hr != nil && !o.otherObject {
				o.states = hr.slotState(hr.cache.Ring().Status(), hr.informers[spec], slot, h) + "; " +
					r.slotState(r.cache.Ring().Status(), r.informers[spec], slot, h)
			}
			rc.overlaps = append(rc.overlaps, o)
		}
	}
	holders[r.instance]++
	rc.uids[key+"@"+r.instance] = uid
	rc.mu.Unlock()
	time.Sleep(reconcileSleep)
	rc.mu.Lock()
	if holders[r.instance]--; holders[r.instance] == 0 {
		delete(holders, r.instance)
		delete(rc.uids, key+"@"+r.instance)
	}
	if len(holders) == 0 {
		delete(rc.in, key)
	}
	rc.mu.Unlock()
}

// classify marks the overlaps that a hand-off explains, given every cache built.
func (rc *reconciles) classify(caches []*replica) []overlap {
	byInstance := map[string]*replica{}
	for _, r := range caches {
		byInstance[r.instance] = r
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make([]overlap, len(rc.overlaps))
	gaveUp := func(instance string, o overlap) bool {
		r := byInstance[instance]
		return r != nil && (r.stoppingBefore(o.at) ||
			r.gaveUpBetween(o.slot, o.at.Add(-30*time.Second), o.at.Add(time.Second)))
	}
	for i, o := range rc.overlaps {
		o.handOff = gaveUp(o.holder, o) || gaveUp(o.entrant, o)
		out[i] = o
	}
	return out
}

// stoppingBefore reports whether a restart began to stop r before t.
func (r *replica) stoppingBefore(t time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.stoppedAt.IsZero() && !r.stoppedAt.After(t)
}

// gaveUpBetween reports whether r last gave up slot within [from, to].
func (r *replica) gaveUpBetween(slot int, from, to time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := r.releasedAt[slot]
	return at.After(from) && !at.After(to)
}

// holdSampler samples every running replica's stores every holdSampleInterval and
// counts the keys held by two replicas at a sampled moment. A replica "holds" a key
// when the key is in the store of one of its informers (ListKeys). A sample lists the
// replicas one after the other, so it spans some milliseconds: a key found in two
// stores is excused only if the replica listed first gave up the key's slot after
// its listing (the other took it in the meantime: a hand-off during the sample, which
// the ring orders release before claim), or if one of the two stores no longer held it
// when its uid was read, right after the listing; any other is a double hold. The
// uids of a ConfigMap key held twice are read at once (a second later a relist may
// have dropped a deleted object from one store, and two objects of one name would
// read as one).
type holdSampler struct {
	replicas []*replica // of the sample under way
	samples  int
	keys     int64 // keys looked at, summed over samples
	// inSample: double-held keys explained by a hand-off during the sample, or that
	// one of the stores no longer held once listed.
	inSample int
	// otherObjects: keys in two stores as two objects (different uids) of one name: a
	// deleted object still held by one replica while the one re-created under its name
	// is held by the replica of its new uid's slot.
	otherObjects int
	doubles      []string
}

const holdSampleInterval = 3 * time.Second

func (h *holdSampler) run(ctx context.Context, f *fleet) {
	for ctx.Err() == nil {
		h.sample(f.current())
		select {
		case <-ctx.Done():
		case <-time.After(holdSampleInterval):
		}
	}
}

// holding is one replica's hold of a key in a sample.
type holding struct {
	r      *replica
	listed time.Time
	ring   shard.Status // r's ring's status just before the listing
	uid    types.UID    // of a ConfigMap key held twice: its uid in r's store right after the listing ("" gone)
}

func (h *holdSampler) sample(replicas []*replica) {
	if len(replicas) == 0 {
		return
	}
	h.replicas = replicas
	found := []map[string][]holding{}
	for spec := range replicas[0].informers {
		m := map[string][]holding{}
		for _, r := range replicas {
			if len(r.informers) <= spec {
				continue
			}
			listed, ring := time.Now(), r.cache.Ring().Status()
			for _, key := range r.informers[spec].inf.GetStore().ListKeys() {
				m[key] = append(m[key], holding{r: r, listed: listed, ring: ring})
			}
		}
		if replicas[0].informers[spec].gvk == cmGVK {
			for key, hs := range m {
				for i := range hs {
					if len(hs) > 1 {
						hs[i].uid = uidIn(hs[i].r.informers[spec], key)
					}
				}
			}
		}
		found = append(found, m)
	}
	h.samples++
	time.Sleep(time.Second) // followRing records a release a little after the moment
	for spec, m := range found {
		h.keys += int64(len(m))
		w := replicas[0].informers[spec]
		for key, hs := range m {
			if len(hs) < 2 {
				continue
			}
			first := hs[0]
			if w.gvk == cmGVK {
				if slices.ContainsFunc(hs, func(x holding) bool { return x.uid == "" }) {
					h.inSample++ // removed from a store during the sample
					continue
				}
				if slices.ContainsFunc(hs, func(x holding) bool { return x.uid != first.uid }) {
					h.otherObjects++
					continue
				}
			}
			ns, _, _ := strings.Cut(key, "/")
			slot := slotOf(w.gvk, ns, first.uid)
			if first.r.gaveUpAfter(slot, first.listed) {
				h.inSample++
				continue
			}
			var ids, states []string
			for _, x := range hs {
				ids = append(ids, x.r.instance)
				states = append(states, x.r.slotState(x.ring, x.r.informers[spec], slot, shardHash(w.gvk, ns, first.uid)))
			}
			h.doubles = append(h.doubles, fmt.Sprintf("%s %s (uid %q, slot %d) held by %v at %s; %s", w.name, key,
				first.uid, slot, ids, first.listed.Format("15:04:05.000"), strings.Join(states, "; ")))
		}
	}
}

// uidIn returns the uid of key in w's store ("" if absent).
func uidIn(w *watched, key string) types.UID {
	if obj, ok, _ := w.inf.GetStore().GetByKey(key); ok {
		if m, err := meta.Accessor(obj); err == nil {
			return m.GetUID()
		}
	}
	return ""
}

// memorySample is each running replica's stored bytes (deltacache_informer_stored_bytes
// of its informers, summed) and the process's heap in use, at one moment.
type memorySample struct {
	at     time.Duration // since the replicas synced
	stored map[string]int64
	heap   uint64
}

// sampleMemory samples every minute from start until ctx ends (and once at once).
func sampleMemory(ctx context.Context, f *fleet, start time.Time, out *[]memorySample, mu *sync.Mutex) {
	for {
		sampleMemoryOnce(f, start, out, mu)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Minute):
		}
	}
}

// sampleMemoryOnce appends one memorySample of the replicas running now.
func sampleMemoryOnce(f *fleet, start time.Time, out *[]memorySample, mu *sync.Mutex) {
	s := memorySample{at: time.Since(start).Round(time.Second), stored: map[string]int64{}}
	for _, r := range f.current() {
		for _, w := range r.informers {
			s.stored[r.id] += w.inf.Indexer().StoredStats().EncodedBytes
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.heap = ms.HeapInuse
	mu.Lock()
	*out = append(*out, s)
	mu.Unlock()
}

// An overlapping reconcile is at a hand-off whichever of the two replicas gave the slot
// up: the one still delivering the notifications it had queued may be the holder or the
// entrant.
func TestOverlapIsAtAHandOffWhenEitherReplicaGaveUpTheSlotWithin30s(t *testing.T) {
	now := time.Now()
	old, cur := &replica{instance: "replica-0#1"}, &replica{instance: "replica-1#2"}
	old.releasedAt[7] = now.Add(-10 * time.Second)
	cur.releasedAt[8] = now.Add(-time.Minute)
	rc := newReconciles()
	rc.overlaps = []overlap{
		{key: "ConfigMap/a/x", holder: old.instance, entrant: cur.instance, slot: 7, at: now},
		{key: "ConfigMap/a/y", holder: cur.instance, entrant: old.instance, slot: 7, at: now},
		{key: "ConfigMap/a/z", holder: old.instance, entrant: cur.instance, slot: 8, at: now},
	}
	var got []bool
	for _, o := range rc.classify([]*replica{old, cur}) {
		got = append(got, o.handOff)
	}
	if want := []bool{true, true, false}; !slices.Equal(got, want) {
		t.Fatalf("at a hand-off: %v, want %v (slot 7 given up 10 s before by replica-0#1, slot 8 a minute before)", got, want)
	}
}
