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

package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/deltacache/deltacache/pkg/informer"
)

// Adaptive label indexes: the cache indexes, per informer entry (kind and shape), the
// label keys its Lists keep scanning for, without being told (issue #19).
//
// A scan of key K is a List whose label selector has an "=", "==" or "in" requirement
// on K, where no configured (WithLabelIndexes) or complete automatic index answers any
// requirement of the selector, and no field selector is given. A scan of K triggers a
// build of "label:<K>" for the entry when
//   - it is the 4th scan of K by the entry within a minute (more than 3 a minute), or
//   - it visits at least 5,000 objects (the entry's objects, or those of the List's
//     namespace).
//
// Of a selector with several such keys, the first in the selector's order (sorted by
// key) that may be built is built. Bounds: at most 3 automatic indexes per entry
// (building or built); a key whose values are nearly unique per object (more than half
// as many distinct values as objects, checked by the build once it has seen 512 objects,
// or all of them in a smaller store) is abandoned, and neither it nor a key whose build
// failed is tried again for 10 minutes; an index that no List has used for 10 minutes is
// dropped (checked every minute).
//
// Builds run one at a time per cache on a goroutine of Start (never on a List's), with
// informer.Indexer.BuildIndex, which holds the informer's pop loop only for a catch-up
// of the writes made during the build, and end with the cache. An index is used by
// Lists once it is complete in every scope of the entry. It is the same index as one
// configured with WithLabelIndexes (labelIndexFunc: namespaced values). Visible:
// ListStats.AdaptiveLabelIndex, the gauges deltacache_adaptive_label_indexes and
// deltacache_adaptive_label_index_bytes (metrics.go), and one log line per index built
// or dropped. WithoutAdaptiveIndexes turns it off.

// adaptiveSettings are the thresholds above; tests shorten them.
type adaptiveSettings struct {
	// scans of a key within window trigger a build; so does one scan of largeScan
	// objects or more.
	scans     int
	window    time.Duration
	largeScan int
	// maxPerKind bounds the automatic indexes (building or built) of an entry.
	maxPerKind int
	// idle: an index unused this long is dropped, a rejected key retried after it.
	idle time.Duration
	// sweepEvery is the period of the drop check.
	sweepEvery time.Duration
	// uniqueSample is the objects the build sees before it judges uniqueness.
	uniqueSample int
}

var defaultAdaptiveSettings = adaptiveSettings{
	scans: 4, window: time.Minute, largeScan: 5000, maxPerKind: 3,
	idle: 10 * time.Minute, sweepEvery: time.Minute, uniqueSample: 512,
}

// adaptiveIndexes is the cache's adaptive label index state and builder; nil when
// turned off (every method is then a no-op).
type adaptiveIndexes struct {
	settings adaptiveSettings
	clock    clock.PassiveClock
	log      logr.Logger
	intern   *interner

	mu    sync.Mutex
	kinds map[*entry]*kindIndexes
	// builds queues the builds to run; a full queue drops the request (the key is
	// then triggered again by later scans).
	builds  chan buildRequest
	running atomic.Bool
}

// kindIndexes is the state of one entry, guarded by adaptiveIndexes.mu.
type kindIndexes struct {
	// scans holds, per key, the times of its last settings.scans scans (a ring).
	scans map[string]*scanRing
	// indexes are the automatic indexes, building or ready.
	indexes map[string]*autoIndex
	// rejected are keys not to build before the time given.
	rejected map[string]time.Time
}

// autoIndex is one automatic index of an entry.
type autoIndex struct {
	key string
	// ready: complete in every scope; Lists use it.
	ready atomic.Bool
	// lastUsed is the clock's time (UnixNano) of the last List that used it.
	lastUsed atomic.Int64
	// exported: counted in the gauges; bytes is the estimate last exported. Both are
	// used by the goroutine of run only.
	exported bool
	bytes    float64
}

// scanRing is the times (UnixNano) of a key's last scans.
type scanRing struct {
	times []int64
	next  int
}

// add records a scan at now and reports whether the ring is full of scans within
// window of now.
func (r *scanRing) add(now time.Time, window time.Duration) bool {
	r.times[r.next] = now.UnixNano()
	r.next = (r.next + 1) % len(r.times)
	oldest := r.times[r.next] // the next to be overwritten
	return oldest != 0 && now.UnixNano()-oldest <= int64(window)
}

// buildRequest is a build to run.
type buildRequest struct {
	e      *entry
	idx    *autoIndex
	reason string
}

func newAdaptiveIndexes(log logr.Logger, intern *interner) *adaptiveIndexes {
	return &adaptiveIndexes{
		settings: defaultAdaptiveSettings,
		clock:    clock.RealClock{},
		log:      log,
		intern:   intern,
		kinds:    map[*entry]*kindIndexes{},
		builds:   make(chan buildRequest, 16),
	}
}

// plan returns the lookups of a List of e with opts that complete automatic indexes
// answer, marking those indexes used; none when the List is a scan, which it records
// (and which may queue a build). It is called by planList for Lists that no configured
// index answers.
func (a *adaptiveIndexes) plan(e *entry, scopes []*scopedInformer, opts *client.ListOptions) []labelLookup {
	if a == nil || opts.LabelSelector == nil || opts.FieldSelector != nil {
		return nil
	}
	keys := equalityLabelKeys(opts.LabelSelector)
	if len(keys) == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	k := a.kinds[e]
	if k == nil {
		k = &kindIndexes{scans: map[string]*scanRing{}, indexes: map[string]*autoIndex{}, rejected: map[string]time.Time{}}
		a.kinds[e] = k
	}
	var ready []string
	for _, key := range keys {
		if idx := k.indexes[key]; idx != nil && idx.ready.Load() {
			ready = append(ready, key)
		}
	}
	now := a.clock.Now()
	if len(ready) > 0 {
		lookups := indexableLabelRequirements(opts.LabelSelector, ready)
		for i := range lookups {
			k.indexes[lookups[i].key].lastUsed.Store(now.UnixNano())
			lookups[i].auto = true
		}
		return lookups
	}
	visited := visitedByScan(e, scopes, opts.Namespace)
	for _, key := range keys {
		ring := k.scans[key]
		if ring == nil {
			ring = &scanRing{times: make([]int64, a.settings.scans)}
			k.scans[key] = ring
		}
		frequent := ring.add(now, a.settings.window)
		if !frequent && visited < a.settings.largeScan {
			continue
		}
		if !a.mayBuildLocked(k, key, now) {
			continue
		}
		reason := fmt.Sprintf("%d scans within %s", a.settings.scans, a.settings.window)
		if !frequent {
			reason = fmt.Sprintf("a scan of %d objects", visited)
		}
		a.queueLocked(e, k, key, reason)
		break
	}
	return nil
}

// mayBuildLocked reports whether key may be built for k now: not built or building,
// not rejected, and k below its bound.
func (a *adaptiveIndexes) mayBuildLocked(k *kindIndexes, key string, now time.Time) bool {
	if _, ok := k.indexes[key]; ok {
		return false
	}
	if until, ok := k.rejected[key]; ok {
		if now.Before(until) {
			return false
		}
		delete(k.rejected, key)
	}
	return len(k.indexes) < a.settings.maxPerKind
}

// queueLocked registers key's index as building and queues its build.
func (a *adaptiveIndexes) queueLocked(e *entry, k *kindIndexes, key, reason string) {
	idx := &autoIndex{key: key}
	select {
	case a.builds <- buildRequest{e: e, idx: idx, reason: reason}:
		k.indexes[key] = idx
	default: // queue full: later scans trigger it again
	}
}

// equalityLabelKeys returns the keys of sel's "=", "==" and "in" requirements, in the
// selector's order.
func equalityLabelKeys(sel labels.Selector) []string {
	reqs, selectable := sel.Requirements()
	if !selectable {
		return nil
	}
	var keys []string
	for i := range reqs {
		switch reqs[i].Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			keys = append(keys, reqs[i].Key())
		}
	}
	return keys
}

// visitedByScan returns the number of objects a List of e in namespace visits without a
// label index: those of the namespace index, or every object.
func visitedByScan(e *entry, scopes []*scopedInformer, namespace string) int {
	n := 0
	for _, s := range scopes {
		if namespace != "" && e.namespaced {
			n += s.indexer.IndexCount(toolscache.NamespaceIndex, namespace)
		} else {
			n += s.indexer.Len()
		}
	}
	return n
}

// claim reports whether the caller is the first to claim a's run (a nil a: false).
func (a *adaptiveIndexes) claim() bool {
	return a != nil && a.running.CompareAndSwap(false, true)
}

// run builds the queued indexes and drops idle ones every settings.sweepEvery until
// ctx ends. Only the caller of a successful claim calls it.
func (a *adaptiveIndexes) run(ctx context.Context) {
	ticker := time.NewTicker(a.settings.sweepEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			a.unexportAll()
			return
		case req := <-a.builds:
			a.build(ctx, req)
		case <-ticker.C:
			a.sweep(ctx)
		}
	}
}

// errUniqueValues abandons the build of a key whose values are nearly unique.
var errUniqueValues = errors.New("label values nearly unique per object")

// uniquenessGuard is a BuildIndexOptions.Observe that abandons a build once it has seen
// sample objects (or all, when fewer) with more than half as many distinct values.
func uniquenessGuard(sample, total int) func(values []string) error {
	if total < sample {
		sample = total
	}
	seen := 0
	distinct := map[string]struct{}{}
	return func(values []string) error {
		seen++
		if len(values) > 0 {
			distinct[values[0]] = struct{}{} // the label's value
		}
		if seen >= sample && 2*len(distinct) > seen {
			return fmt.Errorf("%w: %d values among %d objects", errUniqueValues, len(distinct), seen)
		}
		return nil
	}
}

// build builds req's index in every scope of its entry and makes it ready, or forgets
// it (and, if its values are unique or the build failed, rejects the key for
// settings.idle).
func (a *adaptiveIndexes) build(ctx context.Context, req buildRequest) {
	start := time.Now()
	name := LabelIndexName(req.idx.key)
	var built []*scopedInformer
	var err error
	objects := 0
	for _, s := range req.e.scopes {
		if a.hasIndex(s, name) {
			err = fmt.Errorf("the informer has an index %s already", name)
			break
		}
		n := s.indexer.Len()
		req.e.scoped.add(name)
		err = s.indexer.BuildIndex(ctx, name, labelIndexFunc(req.idx.key, a.intern), informer.BuildIndexOptions{
			// labelIndexFunc reads only the labels: read from the
			// stored bytes, not decoded.
			LabelsOnly: true,
			Observe:    uniquenessGuard(a.settings.uniqueSample, n),
		})
		if err != nil && !a.hasIndex(s, name) {
			break
		}
		objects += n
		built = append(built, s)
		err = nil // errors of single objects: they are not filed
	}
	log := a.log.WithValues("informer", req.e.key.String(), "key", req.idx.key)
	if err != nil {
		for _, s := range built {
			_ = s.indexer.RemoveIndex(context.WithoutCancel(ctx), name)
		}
		a.forget(req.e, req.idx, ctx.Err() == nil)
		if ctx.Err() == nil {
			log.V(1).Info("adaptive label index not built", "reason", err.Error())
		}
		return
	}
	// Exported before it is ready: whoever sees it ready sees its gauges' state.
	bytes := a.export(req.e, req.idx)
	req.idx.lastUsed.Store(a.clock.Now().UnixNano())
	// Logged before it is ready, so that whoever sees it used sees the line.
	log.Info("adaptive label index built", "trigger", req.reason, "objects", objects,
		"estimatedBytes", int64(bytes), "took", time.Since(start).Round(time.Millisecond).String())
	req.idx.ready.Store(true)
}

// hasIndex reports whether s's store has the index name.
func (a *adaptiveIndexes) hasIndex(s *scopedInformer, name string) bool {
	_, _, ok := s.indexer.IndexStats(name)
	return ok
}

// forget removes idx from e's state; reject: the key is not built again for
// settings.idle.
func (a *adaptiveIndexes) forget(e *entry, idx *autoIndex, reject bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := a.kinds[e]
	if k == nil || k.indexes[idx.key] != idx {
		return
	}
	delete(k.indexes, idx.key)
	if reject {
		k.rejected[idx.key] = a.clock.Now().Add(a.settings.idle)
	}
}

// sweep drops the indexes unused for settings.idle, forgets the state of removed
// entries and of scans older than the window, and refreshes the bytes gauge.
func (a *adaptiveIndexes) sweep(ctx context.Context) {
	now := a.clock.Now()
	type drop struct {
		e   *entry
		idx *autoIndex
	}
	var drops []drop
	var live []drop
	a.mu.Lock()
	for e, k := range a.kinds {
		removed := e.scopes[0].removed.Load()
		for key, idx := range k.indexes {
			if !idx.ready.Load() {
				continue // building
			}
			if removed || now.UnixNano()-idx.lastUsed.Load() > int64(a.settings.idle) {
				idx.ready.Store(false)
				delete(k.indexes, key)
				drops = append(drops, drop{e, idx})
			} else {
				live = append(live, drop{e, idx})
			}
		}
		for key, ring := range k.scans {
			if last := ring.times[(ring.next+len(ring.times)-1)%len(ring.times)]; now.UnixNano()-last > int64(a.settings.window) {
				delete(k.scans, key)
			}
		}
		if removed && len(k.indexes) == 0 {
			delete(a.kinds, e)
		}
	}
	a.mu.Unlock()
	for _, d := range drops {
		a.drop(ctx, d.e, d.idx, now)
	}
	for _, l := range live {
		a.export(l.e, l.idx)
	}
}

// drop removes idx, no longer ready, from every scope of e and logs it. A List that
// planned with it before reads through the fallback of candidatesByLabels.
func (a *adaptiveIndexes) drop(ctx context.Context, e *entry, idx *autoIndex, now time.Time) {
	name := LabelIndexName(idx.key)
	for _, s := range e.scopes {
		if err := s.indexer.RemoveIndex(ctx, name); err != nil && ctx.Err() == nil {
			a.log.Error(err, "removing adaptive label index", "informer", e.key.String(), "key", idx.key)
		}
	}
	unexport(e, idx)
	unused := time.Duration(now.UnixNano() - idx.lastUsed.Load())
	a.log.Info("adaptive label index dropped", "informer", e.key.String(), "key", idx.key,
		"unusedFor", unused.Round(time.Second).String())
}

// export updates the gauges of idx (counted once when it becomes ready) and returns
// its estimated bytes.
func (a *adaptiveIndexes) export(e *entry, idx *autoIndex) float64 {
	bytes := 0.0
	for _, s := range e.scopes {
		bytes += labelIndexBytes(s.indexer, LabelIndexName(idx.key))
	}
	labels := adaptiveLabels(e.key, idx.key)
	if !idx.exported {
		adaptiveIndexesGauge.WithLabelValues(labels...).Add(1)
		idx.exported = true
	}
	adaptiveIndexBytes.WithLabelValues(labels...).Add(bytes - idx.bytes)
	idx.bytes = bytes
	return bytes
}

// unexport takes idx out of the gauges.
func unexport(e *entry, idx *autoIndex) {
	if !idx.exported {
		return
	}
	labels := adaptiveLabels(e.key, idx.key)
	adaptiveIndexesGauge.WithLabelValues(labels...).Sub(1)
	adaptiveIndexBytes.WithLabelValues(labels...).Sub(idx.bytes)
	idx.exported, idx.bytes = false, 0
}

// unexportAll takes every index out of the gauges (the cache stops).
func (a *adaptiveIndexes) unexportAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for e, k := range a.kinds {
		for _, idx := range k.indexes {
			unexport(e, idx)
		}
	}
}

// labelIndexBytes estimates the heap an index of indexer holds: per filed entry a
// cell pointer in its bucket's chunk and the chunk's share (~10 B; a value of more
// than 16,384 objects keeps them in a trie, ~40 B each, which this undercounts), per value a slot
// in the value trie, a bucket and its list of chunks (~130 B; the value strings are
// interned, shared with other indexes), and per object the value's string header in
// its record (16 B).
func labelIndexBytes(indexer *informer.Indexer, name string) float64 {
	values, entries, ok := indexer.IndexStats(name)
	if !ok {
		return 0
	}
	return float64(10*entries + 130*values + 16*indexer.Len())
}

// readyKeys returns the keys of e's ready automatic indexes (tests).
func (a *adaptiveIndexes) readyKeys(e *entry) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var keys []string
	if k := a.kinds[e]; k != nil {
		for key, idx := range k.indexes {
			if idx.ready.Load() {
				keys = append(keys, key)
			}
		}
	}
	return keys
}
