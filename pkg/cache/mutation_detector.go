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
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// MutationError reports a cached object that was modified after the cache stored
// it: some caller changed an object read with UnsafeDisableDeepCopy or received by
// an event handler, which every other reader of the cache then sees too. The mutation
// detector (Config.MutationDetector) returns or reports it.
type MutationError struct {
	// Informer names the informer that stores the object, e.g. "Pod.v1" or
	// "ConfigMap.v1 in namespace a".
	Informer string
	// Key is the object's store key: "namespace/name", or "name" for cluster scope.
	Key string
	// ResourceVersion is the object's resourceVersion as stored.
	ResourceVersion string
	// Diff is a unified diff of the object's JSON as stored (-) and as found (+);
	// its +/- lines name the fields that changed.
	Diff string
}

// Error names the object and shows the diff.
func (e *MutationError) Error() string {
	return fmt.Sprintf("deltacache: cached object %s of informer %s (resourceVersion %s) was modified "+
		"after it was stored; deep-copy objects read with UnsafeDisableDeepCopy or received by handlers "+
		"before changing them:\n%s", e.Key, e.Informer, e.ResourceVersion, e.Diff)
}

// mutationDetector keeps, per store key of one informer, the object last handed to
// the store and a deep copy taken when it was, and compares the two: on a read of
// that object (check), when a newer version of the key arrives (record), and
// periodically (run) or on demand (checkAll). A reported mutation is re-baselined,
// so it is reported once. The tracked objects are those that went through the
// informer's transform, including versions the DeltaFIFO coalesced away and deleted
// objects; a key absent from the store at two consecutive periodic checks is
// forgotten.
type mutationDetector struct {
	name   string
	clock  clock.WithTicker
	period time.Duration
	report func(error)

	mu      sync.Mutex
	tracked map[string]*trackedObject
}

type trackedObject struct {
	obj      runtime.Object
	snapshot runtime.Object
	// absent counts consecutive periodic checks that did not find the key in the store.
	absent int
}

func newMutationDetector(
	name string, clk clock.WithTicker, period time.Duration, onMutation func(error),
) *mutationDetector {
	if onMutation == nil {
		onMutation = func(err error) { panic(err) }
	}
	return &mutationDetector{
		name:    name,
		clock:   clk,
		period:  period,
		report:  onMutation,
		tracked: make(map[string]*trackedObject),
	}
}

// record starts tracking obj, about to be stored, under key, its store key
// ("namespace/name", or "name" for cluster scope); the previous version of the key is
// compared one last time.
func (d *mutationDetector) record(key string, obj runtime.Object) {
	snapshot := obj.DeepCopyObject()
	d.mu.Lock()
	previous := d.tracked[key]
	d.tracked[key] = &trackedObject{obj: obj, snapshot: snapshot}
	var found error
	if previous != nil {
		found = d.compareLocked(key, previous)
	}
	d.mu.Unlock()
	if found != nil {
		d.report(found)
	}
}

// check compares obj, just read from the store under key, with its copy.
func (d *mutationDetector) check(key string, obj runtime.Object) {
	d.mu.Lock()
	var found error
	if t := d.tracked[key]; t != nil && t.obj == obj {
		found = d.compareLocked(key, t)
	}
	d.mu.Unlock()
	if found != nil {
		d.report(found)
	}
}

// checkAll compares every tracked object with its copy and returns the mutations
// found, forgetting keys that stayed absent from store; it reports nothing itself.
func (d *mutationDetector) checkAll(store toolscache.Store) []error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var found []error
	for key, t := range d.tracked {
		if err := d.compareLocked(key, t); err != nil {
			found = append(found, err)
		}
		if _, exists, _ := store.GetByKey(key); exists {
			t.absent = 0
			continue
		}
		if t.absent++; t.absent >= 2 {
			delete(d.tracked, key)
		}
	}
	return found
}

// run calls checkAll every period until ctx ends and reports what it finds.
func (d *mutationDetector) run(ctx context.Context, store toolscache.Store) {
	ticker := d.clock.NewTicker(d.period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			for _, err := range d.checkAll(store) {
				d.report(err)
			}
		}
	}
}

// compareLocked returns a *MutationError if t.obj differs from its copy (with
// apimachinery's semantic equality, so that a resource.Quantity caching its string
// form is no mutation), and then takes a new copy. d.mu is held.
func (d *mutationDetector) compareLocked(key string, t *trackedObject) error {
	if apiequality.Semantic.DeepEqual(t.snapshot, t.obj) {
		return nil
	}
	err := &MutationError{Informer: d.name, Key: key, Diff: diff.Diff(t.snapshot, t.obj)}
	if m, merr := apimeta.Accessor(t.snapshot); merr == nil {
		err.ResourceVersion = m.GetResourceVersion()
	}
	t.snapshot = t.obj.DeepCopyObject()
	return err
}

// CheckMutations compares every object the cache tracks with the copy the mutation
// detector took when it was stored, and returns one *MutationError per modified
// object (joined with errors.Join; nil if none). The errors are returned, not passed
// to Config.OnMutation. Call it at the end of a test to catch callers that modified
// cached objects. Without the mutation detector (Config.MutationDetector) it returns
// nil.
func (c *Cache) CheckMutations() error {
	var found []error
	for _, s := range c.informers.snapshot() {
		if s.detector != nil {
			found = append(found, s.detector.checkAll(s.indexer)...)
		}
	}
	return errors.Join(found...)
}
