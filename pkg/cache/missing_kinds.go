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
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kindPollInterval is how often a blocking GetInformer for a kind that is not served
// asks the RESTMapper again. controller-runtime's dynamic RESTMapper re-discovers the
// group on each miss (two discovery GETs), so a CRD installed after the Manager started
// is found within this interval of being established.
const kindPollInterval = 500 * time.Millisecond

// missingKinds are the GVKs that blocking GetInformer calls wait for because the API
// server does not serve them (yet): a controller's source.Kind started before its CRD
// was installed. While one is waited for, WaitForCacheSync waits and the readyz check
// fails naming it. The zero value is ready to use.
type missingKinds struct {
	mu      sync.Mutex
	waiting map[schema.GroupVersionKind]int // GVK → GetInformer calls waiting for it
	changed chan struct{}                   // closed and replaced when waiting changes
}

// add records one more waiter for gvk and returns the function that removes it.
func (m *missingKinds) add(gvk schema.GroupVersionKind) (release func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.waiting == nil {
		m.waiting = make(map[schema.GroupVersionKind]int)
	}
	m.waiting[gvk]++
	m.notifyLocked()
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.waiting[gvk]--; m.waiting[gvk] <= 0 {
				delete(m.waiting, gvk)
			}
			m.notifyLocked()
		})
	}
}

func (m *missingKinds) notifyLocked() {
	if m.changed != nil {
		close(m.changed)
	}
	m.changed = make(chan struct{})
}

// snapshot returns the GVKs waited for, sorted, and a channel closed at the next change.
func (m *missingKinds) snapshot() ([]schema.GroupVersionKind, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.changed == nil {
		m.changed = make(chan struct{})
	}
	gvks := make([]schema.GroupVersionKind, 0, len(m.waiting))
	for gvk := range m.waiting {
		gvks = append(gvks, gvk)
	}
	slices.SortFunc(gvks, func(a, b schema.GroupVersionKind) int {
		return strings.Compare(a.String(), b.String())
	})
	return gvks, m.changed
}

// awaitKind is getEntry's wait for a kind the RESTMapper does not know (mapErr, a
// no-match error), once the cache has started and the caller blocks: it records the
// kind as missing, asks the RESTMapper again every kindPollInterval, and returns the
// entry built once the kind is served, with the function that ends the kind's missing
// state (the caller runs it after adding the entry, so that WaitForCacheSync never
// sees the kind neither missing nor an informer). When ctx ends first it returns
// mapErr: the caller (source.Kind) sees the NoKindMatch error it knows.
func (c *Cache) awaitKind(ctx context.Context, key entryKey, mapErr error) (*entry, func(), error) {
	release := c.missing.add(key.gvk)
	c.log.Info("Waiting for kind to be served: is its CRD installed?", "kind", key.gvk.String(), "error", mapErr.Error())
	ticker := time.NewTicker(kindPollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			release()
			return nil, func() {}, mapErr
		case <-ticker.C:
		}
		e, err := c.newEntry(key)
		switch {
		case err == nil:
			c.log.Info("Kind is served now", "kind", key.gvk.String())
			return e, release, nil
		case !meta.IsNoMatchError(err):
			release()
			return nil, func() {}, err
		}
	}
}

// waitForMissingKinds is WaitForCacheSync's loop over the informer map's: it returns
// true once the informers have synced and no GetInformer waits for a kind that is not
// served; false when ctx ends or the informers cannot sync. The kinds waited for are
// logged once.
func (c *Cache) waitForMissingKinds(ctx context.Context, informersSynced func() bool) bool {
	logged := false
	for {
		if !informersSynced() {
			return false
		}
		gvks, changed := c.missing.snapshot()
		if len(gvks) == 0 {
			return true
		}
		if !logged {
			c.log.Info("Cache not synced: waiting for kinds that are not served (CRDs not installed?)",
				"kinds", fmt.Sprint(gvks))
			logged = true
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		}
	}
}

// missingKindLines are the readyz check's lines for the kinds waited for.
func (c *Cache) missingKindLines() []string {
	gvks, _ := c.missing.snapshot()
	lines := make([]string, 0, len(gvks))
	for _, gvk := range gvks {
		lines = append(lines, fmt.Sprintf("%s: not served: no resource for kind %s in %s (CRD not installed?); "+
			"a controller waits for it", gvk.GroupKind().String(), gvk.Kind, gvk.GroupVersion().String()))
	}
	return lines
}
