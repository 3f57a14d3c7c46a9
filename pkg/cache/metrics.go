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
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/shard"
)

// Informer metrics. Every informer of every Cache in the process reports to
// informer.DefaultMetrics (deltacache_informer_* and deltacache_handler_* series; see
// informer.Metrics and the README), which init registers with controller-runtime's
// metrics.Registry, so the Manager's metrics endpoint serves them next to
// controller-runtime's own.
//
// Labels: group, version and kind of the entry's GVK and shape ("typed",
// "unstructured", "metadata", the entryKey's shape), which newEntry passes as
// informer.Options.MetricLabels (metricLabels), so each (GVK, shape) entry has its
// own series. The per-namespace informers of an entry (DefaultNamespaces,
// ByObject.Namespaces) share them and add up: no namespace label, so cardinality stays
// bounded by the kinds cached. Two caches of one process that cache the same (GVK,
// shape) add up as well. When an entry's informers stop (RemoveInformer, the cache's
// end), its series are deleted.
//
// deltacache_cache_lists_total (stats.go) counts how Lists were answered;
// deltacache_adaptive_label_indexes and deltacache_adaptive_label_index_bytes (below)
// show the automatic label indexes (adaptive_index.go).
func init() {
	if err := informer.RegisterMetrics(metrics.Registry); err != nil {
		panic(err)
	}
	if err := shard.Register(metrics.Registry); err != nil {
		panic(err)
	}
	metrics.Registry.MustRegister(receivedBytes, adaptiveIndexesGauge, adaptiveIndexBytes)
}

// adaptiveIndexesGauge is the number of automatic label indexes (adaptive_index.go)
// complete per entry and label key: 1 while the index exists, 0 once dropped; caches of
// one process that index the same key of the same entry add up.
var adaptiveIndexesGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "deltacache_adaptive_label_indexes",
	Help: "Label indexes the deltacache cache built by itself, by kind, shape and label key (1 while present).",
}, adaptiveLabelNames)

// adaptiveIndexBytes is the estimated heap of each automatic label index
// (labelIndexBytes), refreshed every sweep.
var adaptiveIndexBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "deltacache_adaptive_label_index_bytes",
	Help: "Estimated heap bytes of the label indexes the deltacache cache built by itself, by kind, shape and label key.",
}, adaptiveLabelNames)

var adaptiveLabelNames = []string{"group", "version", "kind", "shape", "key"}

// adaptiveLabels returns the label values of the adaptive index series of key's label
// key labelKey.
func adaptiveLabels(key entryKey, labelKey string) []string {
	return []string{key.gvk.Group, key.gvk.Version, key.gvk.Kind, key.shape.String(), labelKey}
}

// metricLabels returns the labels of the series of key's informers: what the informers
// derive from their example object.
func metricLabels(key entryKey) informer.MetricLabels {
	return informer.MetricLabels{Group: key.gvk.Group, Version: key.gvk.Version, Kind: key.gvk.Kind,
		Shape: key.shape.String()}
}
