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
	"strconv"
	"strings"
)

// Section E ("sharding", issue #13): R deltacache replicas sharded by pod uid, each in
// its own process, all running at once against one envtest kube-apiserver started with
// the ShardedListAndWatch feature gate, against one unsharded deltacache replica and
// one controller-runtime cache over the same pods. This file holds the section's
// identifiers and how a round's replicas are summed up; sharding_workload.go is the
// child's side, sharding_run.go the parent's, sharding_report.go the table.

// SectionSharding is the ID of section E.
const SectionSharding = "sharding"

// ShardReplicaCounts are the numbers of sharded replicas section E measures.
var ShardReplicaCounts = []int{1, 2, 3, 4}

// Figure IDs of section E. FigSync, FigHeapPerPod (here per pod held) and FigPeakRSS
// are shared with section A. A round's value of each is the mean over its replicas.
const (
	// FigShardBytes is the response-body MiB the replica read for pods (LIST pages and
	// watch streams of /pods), counted by a transport of the bench in the child.
	FigShardBytes = "shard_pod_bytes_mib"
	// FigShardHeap is the live heap after GC the cache added (total, MiB).
	FigShardHeap = "shard_heap_mib"
	// FigShardObjects is the number of pods the replica held once synced with its
	// share; FigShardObjectsMin, Max and Sum are over a round's replicas.
	FigShardObjects    = "shard_objects"
	FigShardObjectsMin = "shard_objects_min"
	FigShardObjectsMax = "shard_objects_max"
	FigShardObjectsSum = "shard_objects_sum"
)

// shardMeanFigures are the figures a round reports as the mean over its replicas.
var shardMeanFigures = []string{FigShardBytes, FigShardHeap, FigHeapPerPod, FigPeakRSS, FigSync, FigShardObjects}

// ShardedContender is the contender of R sharded deltacache replicas: deltacache's
// configuration (Deltacache) with WithSharding, pods by uid.
func ShardedContender(replicas int) Contender {
	return Contender("deltacache-sharded-" + strconv.Itoa(replicas))
}

// ShardReplicas returns the number of replicas of a ShardedContender, and false for
// another contender.
func ShardReplicas(c Contender) (int, bool) {
	s, ok := strings.CutPrefix(string(c), "deltacache-sharded-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0
}

// shardingSection is section E for o: its contenders are the two unsharded baselines
// then the sharded configurations; its figures are the mean per replica.
func shardingSection(o Options) Section {
	cs := []Contender{Deltacache, ControllerRuntime}
	for _, r := range ShardReplicaCounts {
		cs = append(cs, ShardedContender(r))
	}
	return Section{
		ID:    SectionSharding,
		Title: fmt.Sprintf("E. Sharded replicas: %d pods split by uid among R replicas", o.APIPods),
		Description: "A second envtest kube-apiserver, started with `--feature-gates=ShardedListAndWatch=true` and " +
			"seeded with section A's pods, serves R = 1–4 deltacache replicas (`WithSharding`, " +
			"`ByUID: Pod`), each in its own process and all running at once, each with its own Lease in one ring " +
			"(the R Leases are written before the replicas start, so none lists everything alone first). " +
			"Sync is from Start to holding its share (the ring has R members, the replica serves its slots " +
			"and its informer has listed them); bytes are the response bodies of the pod lists and watches " +
			"read by the replica; heap is the live heap after GC the cache added. Each figure is the mean per " +
			"replica; ratios are per replica against one unsharded deltacache replica and one " +
			"controller-runtime cache over the same server and pods; the pods held by the R replicas must " +
			"add up to the number of pods, or the run fails.",
		Contenders: cs,
		Figures: []Figure{
			{FigShardBytes, "Pod bytes received from the API server", unitMiB, false},
			{FigShardHeap, "Heap in use after GC", unitMiB, false},
			{FigHeapPerPod, "Heap in use after GC per pod held", "B", false},
			{FigPeakRSS, "Peak RSS", unitMiB, false},
			{FigSync, "Time to sync its share", "s", false},
		},
	}
}

// AggregateReplicas sums up one round of a configuration: replicas holds each replica's
// Values (one value per figure; one replica for an unsharded cache) and pods is the
// number of pods on the server. The result has, for each of shardMeanFigures, the mean
// over the replicas, and FigShardObjectsMin, Max and Sum. It fails if a replica lacks a
// figure or if the pods held do not add up to pods (a pod held twice or by nobody).
func AggregateReplicas(replicas []Values, pods int) (Values, error) {
	if len(replicas) == 0 {
		return nil, fmt.Errorf("no replica measured")
	}
	out := Values{}
	for _, fig := range shardMeanFigures {
		sum := 0.0
		for i, v := range replicas {
			if len(v[fig]) != 1 {
				return nil, fmt.Errorf("replica %d of %d: %d values of %s, want 1", i, len(replicas), len(v[fig]), fig)
			}
			sum += v[fig][0]
		}
		out.add(fig, sum/float64(len(replicas)))
	}
	held := make([]float64, len(replicas))
	for i, v := range replicas {
		held[i] = v[FigShardObjects][0]
	}
	total := 0.0
	for _, h := range held {
		total += h
	}
	out.add(FigShardObjectsMin, slices.Min(held))
	out.add(FigShardObjectsMax, slices.Max(held))
	out.add(FigShardObjectsSum, total)
	if int(total) != pods {
		return nil, fmt.Errorf("%d replica(s) hold %v pods, %g in all: want %d", len(replicas), held, total, pods)
	}
	return out, nil
}
