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

package bench

import (
	"fmt"
	"slices"
	"time"
)

// Options sizes one `make bench` run.
type Options struct {
	// Runs is the number of rounds; every figure is the median over them.
	Runs int
	// APIPods is the number of pods of the API server workload.
	APIPods int
	// SeedWorkers is the number of concurrent pod creators.
	SeedWorkers int
	// SyncSmall, SyncLarge and SyncHuge are the pod counts of the in-process
	// initial syncs.
	SyncSmall, SyncLarge, SyncHuge int
	// SmallObjects is the object count of section B2m (metadata-sized pods).
	SmallObjects int
	// Keys is the number of distinct pods the event and store workloads update.
	Keys int
	// KeysLarge and KeysHuge are the stored pods of the throughput workloads at
	// scale (each gets max(Events, keys) updates).
	KeysLarge, KeysHuge int
	// Events is the number of updates of the throughput and stuck-handler workloads;
	// the stuck handler is also measured after Events/10.
	Events int
	// StoreReaders is the number of List goroutines of the store workload.
	StoreReaders int
	// StoreDuration is how long each store figure writes.
	StoreDuration time.Duration
	// ListPods is the number of pods of the in-process List workload.
	ListPods int
	// RestartPods and RestartConfigMaps are the objects of section R.
	RestartPods, RestartConfigMaps int
	// OperatorRate is the pod changes per second of section O's churn, and
	// OperatorChurn how long it lasts.
	OperatorRate  float64
	OperatorChurn time.Duration
	// LatencyTime is how long section L feeds events at each rate (its -benchtime).
	LatencyTime time.Duration
	// OpTime is the minimum time over which one read figure is averaged.
	OpTime time.Duration
	// Seed seeds the choice of keys and label values read.
	Seed uint64
	// Only, when not empty, names the sections to run (their IDs, e.g.
	// "apiserver"); the others are skipped. For development: a report of a
	// partial run says which sections it lacks.
	Only []string
}

// RunsSection reports whether section id is to be run (see Options.Only).
func (o Options) RunsSection(id string) bool {
	return len(o.Only) == 0 || slices.Contains(o.Only, id)
}

// DefaultOptions are the sizes of the issue: 5 runs, 20k pods on the API server, 10k
// and 100k pods synced in process, 1M events over 10k keys, 10 List readers, Lists at
// 100k pods.
func DefaultOptions() Options {
	return Options{
		Runs: 5, APIPods: 20_000, SeedWorkers: 16,
		SyncSmall: 10_000, SyncLarge: 100_000, SyncHuge: 1_000_000, SmallObjects: 100_000,
		Keys: 10_000, KeysLarge: 100_000, KeysHuge: 1_000_000, Events: 1_000_000,
		StoreReaders: 10, StoreDuration: 2 * time.Second,
		ListPods: 100_000, OpTime: 500 * time.Millisecond, Seed: 1,
		OperatorRate: 50, OperatorChurn: 90 * time.Second,
		RestartPods: 50_000, RestartConfigMaps: 20_000, LatencyTime: 10 * time.Second,
	}
}

// QuickOptions are a development run of a few minutes: one run, a tenth of the sizes.
func QuickOptions() Options {
	return Options{
		Runs: 1, APIPods: 2_000, SeedWorkers: 16,
		SyncSmall: 1_000, SyncLarge: 10_000, SyncHuge: 20_000, SmallObjects: 10_000,
		Keys: 1_000, KeysLarge: 10_000, KeysHuge: 20_000, Events: 100_000,
		StoreReaders: 10, StoreDuration: 500 * time.Millisecond,
		ListPods: 10_000, OpTime: 100 * time.Millisecond, Seed: 1,
		OperatorRate: 20, OperatorChurn: 10 * time.Second,
		RestartPods: 5_000, RestartConfigMaps: 2_000, LatencyTime: 2 * time.Second,
	}
}

// Figure describes one measured figure for the report.
type Figure struct {
	ID    string
	Title string
	Unit  string
	// HigherIsBetter is true for rates, false for costs (time, memory).
	HigherIsBetter bool
}

// Section is one table of the report: a workload, its contenders and figures.
type Section struct {
	ID          string
	Title       string
	Description string
	Contenders  []Contender
	Figures     []Figure
	// EveryOurs gives every deltacache contender its ratio columns (not only Ours).
	EveryOurs bool
}

// Ours is the deltacache configuration the section's ratios are computed for:
// Deltacache, or the section's first contender when it does not measure Deltacache.
func (s Section) Ours() Contender {
	if slices.Contains(s.Contenders, Deltacache) || len(s.Contenders) == 0 {
		return Deltacache
	}
	return s.Contenders[0]
}

// Peers are the contenders deltacache's ratios are computed against, in column order.
var Peers = []Contender{ControllerRuntime, ControllerRuntimeStrip, ClientGo}

// Section IDs.
const (
	SectionAPIServer = "apiserver"
	SectionSyncSmall = "sync-small"
	SectionSyncLarge = "sync-large"
	SectionSyncHuge  = "sync-huge"
	// SectionSyncSmallObjects is B2m: metadata-sized pods listed at once.
	SectionSyncSmallObjects = "sync-small-objects"
	SectionThroughput       = "throughput"
	// SectionThroughputLarge and SectionThroughputHuge are SectionThroughput
	// with KeysLarge and KeysHuge pods stored.
	SectionThroughputLarge = "throughput-large"
	SectionThroughputHuge  = "throughput-huge"
	SectionStore           = "store"
	SectionStuck           = "stuck"
	SectionMemoryAPI       = "memory-api"
	SectionKinds           = "kinds"
	SectionFootprint       = "footprint"
)

func readFigures() []Figure {
	return []Figure{
		{FigGet, "Get by key", "µs", false},
		{FigListLabelNS, "List by label app=<v> in its namespace", "µs", false},
		{FigListLabel, "List by label app=<v>, all namespaces", "µs", false},
		{FigListLabelAlloc, "— bytes allocated per List", "KiB", false},
		{FigListLabelGC, "— garbage collector CPU per List", "µs", false},
		{FigListLabelShared, "— the same List with UnsafeDisableDeepCopy", "µs", false},
		{FigListNode, "List by field index spec.nodeName", "µs", false},
		{FigListNS, "List of a namespace", "µs", false},
	}
}

func kindFigures() []Figure {
	var out []Figure
	for _, k := range Kinds {
		out = append(out,
			Figure{figKindHeap(k), kindTitles[k] + ": heap in use after GC per object", "B", false},
			Figure{figKindGet(k), kindTitles[k] + ": Get by key", "µs", false},
			Figure{figKindList(k), kindTitles[k] + ": List of a namespace", "µs", false})
	}
	return out
}

func syncFigures() []Figure {
	return []Figure{
		{FigPipeSync, "Time to sync", "s", false},
		{FigPipeAllocs, "Allocations per pod", "allocs", false},
		{FigPipeAllocBytes, "Bytes allocated per pod", "B", false},
		{FigPipeHeap, "Heap added per pod after sync", "B", false},
	}
}

// Sections returns the report's sections for o.
func (o Options) Sections() []Section {
	pipeline := []Contender{Deltacache, ClientGo}
	return []Section{
		operatorSection(o),
		latencySection(o),
		restartSection(o),
		{
			ID:    SectionAPIServer,
			Title: fmt.Sprintf("A. Real API server: %d pods", o.APIPods),
			Description: "Each contender in its own process against the same envtest kube-apiserver; " +
				"sync is from Start to synced, heap is the live heap after GC minus the process's " +
				"before the cache was built, per pod; peak RSS is VmHWM after sync; reads are means.",
			Contenders: []Contender{Deltacache, DeltacacheDefaults, ControllerRuntime, ControllerRuntimeStrip, ClientGo},
			Figures: append([]Figure{
				{FigSync, "Time to sync", "s", false},
				{FigHeapPerPod, "Heap in use after GC per pod", "B", false},
				{FigPeakRSS, "Peak RSS", unitMiB, false},
			}, readFigures()...),
		},
		{
			ID: SectionKinds,
			Title: fmt.Sprintf("C. Real API server: %d Secrets, %d App CRD objects", NewKindsLayout(o.APIPods).Secrets,
				NewKindsLayout(o.APIPods).Apps),
			Description: "Each contender caches one kind alone, in its own process, against section A's API server: " +
				"heap as in A, per object; Get and List of a namespace (1/20 of the objects) are means. " +
				"deltacache's defaults hold Secrets as protobuf, unstructured Apps as CBOR and typed Apps " +
				"decoded; \"every kind compact\" holds typed Apps as CBOR too.",
			Contenders: []Contender{DeltacacheDefaults, DeltacacheCompact, ControllerRuntime},
			Figures:    kindFigures(),
		},
		{
			ID:    SectionSyncSmall,
			Title: fmt.Sprintf("B1. In-process initial sync of %d pods", o.SyncSmall),
			Description: "Paginated list (500 per page) → queue → store → one handler, until the handler " +
				"has seen every pod.",
			Contenders: pipeline,
			Figures:    syncFigures(),
		},
		{
			ID:          SectionSyncLarge,
			Title:       fmt.Sprintf("B2. In-process initial sync of %d pods", o.SyncLarge),
			Description: "As B1.",
			Contenders:  pipeline,
			Figures:     syncFigures(),
		},
		{
			ID:          SectionSyncHuge,
			Title:       fmt.Sprintf("B2b. In-process initial sync of %d pods", o.SyncHuge),
			Description: "As B1.",
			Contenders:  pipeline,
			Figures:     syncFigures(),
		},
		{
			ID:    SectionSyncSmallObjects,
			Title: fmt.Sprintf("B2m. In-process initial sync of %d small objects, listed at once", o.SmallObjects),
			Description: "Metadata-sized pods (name, namespace, two labels, resourceVersion: what a metadata-only " +
				"informer holds) listed in one page, in key order, by an in-memory ListerWatcher that costs " +
				"nothing, so that the store's per-object cost is what is measured; \"every kind compact\" " +
				"stores them as pkg/cache does (protobuf, compressed).",
			Contenders: append(append([]Contender{}, pipeline...), DeltacacheCompact),
			Figures:    syncFigures(),
		},
		{
			ID:    SectionThroughput,
			Title: fmt.Sprintf("B3. Throughput: %d updates over %d keys", o.Events, o.Keys),
			Description: "Watch → queue → store → one handler, until the handler has seen the last state of every key. " +
				"deltacache holds the pods decoded here; \"every kind compact\" holds them as protobuf, compressed (its default for pods), " +
				"and the last column does too while writing a snapshot of its store every " + PipelineSnapshotInterval.String() +
				" (one after the other for the whole run).",
			Contenders: append(append([]Contender{}, pipeline...), DeltacacheCompact, DeltacacheSnapshots),
			Figures:    []Figure{{FigThroughput, "Updates per second", "events/s", true}},
		},
		{
			ID: SectionThroughputLarge,
			Title: fmt.Sprintf("B3b. Throughput: %d updates over %d keys", max(o.Events, o.KeysLarge),
				o.KeysLarge),
			Description: "As B3, with more objects stored.",
			Contenders:  pipeline,
			Figures:     []Figure{{FigThroughput, "Updates per second", "events/s", true}},
		},
		{
			ID:          SectionThroughputHuge,
			Title:       fmt.Sprintf("B3c. Throughput: %d updates over %d keys", max(o.Events, o.KeysHuge), o.KeysHuge),
			Description: "As B3, with more objects stored.",
			Contenders:  pipeline,
			Figures:     []Figure{{FigThroughput, "Updates per second", "events/s", true}},
		},
		{
			ID:    SectionStore,
			Title: fmt.Sprintf("B4. Store writes over %d pods", o.Keys),
			Description: fmt.Sprintf("One writer updating the Indexer, alone and with %d goroutines "+
				"calling List in a loop.", o.StoreReaders),
			Contenders: pipeline,
			Figures: []Figure{
				{FigWrites0, "Writes per second, no reader", "writes/s", true},
				{FigWrites10, fmt.Sprintf("Writes per second, %d List readers", o.StoreReaders), "writes/s", true},
				{FigReadLists, fmt.Sprintf("Lists per second of the %d readers", o.StoreReaders), "lists/s", true},
			},
		},
		{
			ID:          SectionStuck,
			Title:       fmt.Sprintf("B5. Memory held for a stuck handler, %d keys", o.Keys),
			Description: "Live heap added while the only handler blocks, once the store holds every key's last state.",
			Contenders:  pipeline,
			Figures: []Figure{
				{FigStuckFew, fmt.Sprintf("Memory held after %d events", o.Events/10), unitMiB, false},
				{FigStuckMany, fmt.Sprintf("Memory held after %d events", o.Events), unitMiB, false},
			},
		},
		{
			ID:    SectionFootprint,
			Title: fmt.Sprintf("D. Where a cached pod's bytes go (%d server-shaped pods, in process)", o.APIPods),
			Description: "Each row is the live heap one layer adds, per pod, built one after the other in one " +
				"process: first what client-go's and controller-runtime's caches hold, then deltacache's " +
				"compact store layer by layer. Interned strings are shared, so they add almost nothing per pod.",
			Contenders: []Contender{Deltacache},
			Figures:    footFigures(),
		},
		{
			ID:    SectionMemoryAPI,
			Title: fmt.Sprintf("B6. Reads at %d pods (in-memory API)", o.ListPods),
			Description: "The caches filled through an in-process API (http.RoundTripper, no server); " +
				"each figure repeated once per run in one process per contender.",
			Contenders: []Contender{Deltacache, ControllerRuntime, ControllerRuntimeStrip, ClientGo},
			Figures: append([]Figure{
				{FigHeapPerPod, "Heap in use after GC per pod", "B", false},
			}, readFigures()...),
		},
		shardingSection(o),
	}
}
