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
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// listsTotal exports ListStats of every Cache of the process as the counter
// deltacache_cache_lists_total{group,version,kind,path}, path being "label-index",
// "field-index", "namespace-index" or "scan". It is registered with
// controller-runtime's metrics.Registry, which the Manager's metrics server serves.
var listsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "deltacache_cache_lists_total",
	Help: "Lists answered by the deltacache cache, by kind and by how the candidates were selected " +
		"(label-index, field-index, namespace-index or scan).",
}, []string{"group", "version", "kind", "path"})

func init() {
	metrics.Registry.MustRegister(listsTotal)
}

// ListStats counts, per GVK, how each List was answered. Every List that reaches the
// informer's store increments exactly one counter; Lists that fail before (cache not
// started, unknown namespace, invalid field selector, missing index) count nowhere.
// The counts cover every shape (typed, unstructured, metadata-only) of the GVK.
type ListStats struct {
	// LabelIndex counts Lists answered from a "label:<key>" index, declared with
	// WithLabelIndexes or built by the cache (adaptive; AdaptiveLabelIndex of them).
	LabelIndex uint64
	// AdaptiveLabelIndex counts the Lists of LabelIndex answered from a label index
	// the cache built by itself (see Config.DisableAdaptiveIndexes). Not exported in
	// deltacache_cache_lists_total, where they count as "label-index".
	AdaptiveLabelIndex uint64
	// FieldIndex counts Lists answered from a "field:<name>" index (MatchingFields).
	FieldIndex uint64
	// NamespaceIndex counts Lists of one namespace answered from the namespace index.
	NamespaceIndex uint64
	// Scan counts Lists that visited every object of the type.
	Scan uint64
}

// listPath is the way a List selects its candidates, narrowest first.
type listPath int

const (
	pathFieldIndex listPath = iota
	pathLabelIndex
	pathNamespaceIndex
	pathScan
)

func (p listPath) String() string {
	switch p {
	case pathFieldIndex:
		return "field-index"
	case pathLabelIndex:
		return "label-index"
	case pathNamespaceIndex:
		return "namespace-index"
	default:
		return "scan"
	}
}

// listCounters are the counts of one GVK, indexed by listPath: this cache's own, and the
// process-wide listsTotal children.
type listCounters struct {
	counts   [pathScan + 1]atomic.Uint64
	exported [pathScan + 1]prometheus.Counter
	// adaptive counts the label-index Lists answered from an adaptive index.
	adaptive atomic.Uint64
}

func newListCounters(gvk schema.GroupVersionKind) *listCounters {
	c := &listCounters{}
	for path := range c.exported {
		c.exported[path] = listsTotal.WithLabelValues(gvk.Group, gvk.Version, gvk.Kind, listPath(path).String())
	}
	return c
}

// listStatsRegistry holds the counters of every GVK listed so far; it is safe for
// concurrent use and never blocks a List for longer than a map lookup.
type listStatsRegistry struct {
	mu    sync.RWMutex
	byGVK map[schema.GroupVersionKind]*listCounters
}

func (r *listStatsRegistry) counters(gvk schema.GroupVersionKind) *listCounters {
	r.mu.RLock()
	c, ok := r.byGVK[gvk]
	r.mu.RUnlock()
	if ok {
		return c
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok = r.byGVK[gvk]; ok {
		return c
	}
	if r.byGVK == nil {
		r.byGVK = make(map[schema.GroupVersionKind]*listCounters)
	}
	c = newListCounters(gvk)
	r.byGVK[gvk] = c
	return c
}

func (r *listStatsRegistry) record(gvk schema.GroupVersionKind, path listPath) {
	c := r.counters(gvk)
	c.exported[path].Inc()
	c.counts[path].Add(1)
}

// recordAdaptive counts a List of gvk answered from an adaptive label index (recorded
// as pathLabelIndex too).
func (r *listStatsRegistry) recordAdaptive(gvk schema.GroupVersionKind) {
	r.counters(gvk).adaptive.Add(1)
}

func (r *listStatsRegistry) get(gvk schema.GroupVersionKind) ListStats {
	r.mu.RLock()
	c, ok := r.byGVK[gvk]
	r.mu.RUnlock()
	if !ok {
		return ListStats{}
	}
	return ListStats{
		LabelIndex:         c.counts[pathLabelIndex].Load(),
		AdaptiveLabelIndex: c.adaptive.Load(),
		FieldIndex:         c.counts[pathFieldIndex].Load(),
		NamespaceIndex:     c.counts[pathNamespaceIndex].Load(),
		Scan:               c.counts[pathScan].Load(),
	}
}

// ListStats returns how the Lists of gvk (the object kind, e.g. "Pod", not "PodList")
// were answered since the cache was created; zero for a GVK never listed.
func (c *Cache) ListStats(gvk schema.GroupVersionKind) ListStats {
	return c.stats.get(gvk)
}
