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
	"cmp"
	"runtime"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/informer"
	storagecodec "github.com/deltacache/deltacache/pkg/informer/codec"
	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// The footprint workload (section D) takes a cached pod apart: it builds, one layer at
// a time, what each cache holds for n server-shaped pods and measures the live heap
// each layer adds, per pod.

// Figure IDs of section D, in layer order.
const (
	FigFootDecodedFull     = "foot_decoded_with_managed_fields"
	FigFootDecoded         = "foot_decoded_stripped"
	FigFootClientGoStore   = "foot_client_go_store_ns_index"
	FigFootPayload         = "foot_protobuf_payload"
	FigFootCompressed      = "foot_compressed_payload"
	FigFootStore           = "foot_store_entry"
	FigFootNamespaceIndex  = "foot_namespace_index"
	FigFootLabelFieldIndex = "foot_label_and_field_index"

	// The realistic population's payloads (informertest.Cluster).
	FigFootRealDecodedFull = "foot_real_decoded_with_managed_fields"
	FigFootRealDecoded     = "foot_real_decoded_stripped"
	FigFootRealPayload     = "foot_real_protobuf_payload"
	FigFootRealCompressed  = "foot_real_compressed_payload"
)

// footprintClusterSeed seeds the realistic population of section D.
const footprintClusterSeed = 23

// footFigures are section D's rows.
func footFigures() []Figure {
	return []Figure{
		{FigFootDecodedFull, "decoded pod with managedFields (controller-runtime's default holds this)", "B", false},
		{FigFootDecoded, "decoded pod, managedFields stripped (controller-runtime with the strip transform)", "B", false},
		{FigFootClientGoStore, "client-go store entry and namespace index, on top of a decoded pod", "B", false},
		{FigFootPayload, "protobuf encoding of the stripped pod (deltacache's payload without compression)", "B", false},
		{FigFootCompressed, "the same, compressed against the kind's dictionaries (deltacache's payload)", "B", false},
		{FigFootStore, "deltacache store entry (record, cell and its key, segment slot) on top of the payload", "B", false},
		{FigFootNamespaceIndex, "deltacache namespace index", "B", false},
		{FigFootLabelFieldIndex, "deltacache label:app and field:spec.nodeName indexes (values interned)", "B", false},
		{FigFootRealDecodedFull, "realistic pod (60 templates), decoded with managedFields", "B", false},
		{FigFootRealDecoded, "realistic pod, decoded, managedFields stripped", "B", false},
		{FigFootRealPayload, "realistic pod, protobuf encoding of the stripped pod", "B", false},
		{FigFootRealCompressed, "realistic pod, the same compressed (deltacache's payload)", "B", false},
	}
}

// MeasureFootprint returns section D's figures for n pods.
func MeasureFootprint(n int) (Values, error) {
	l := NewLayout(n)
	v := Values{}
	perPod := func(before, after MemSnapshot) float64 { return HeapGrowth(before, after) / float64(n) }

	// Decoded pods, as the caches of client-go and controller-runtime hold them.
	before := LiveHeap()
	full := make([]*corev1.Pod, n)
	for i := range full {
		full[i] = l.ServerPod(i, strconv.Itoa(1000+i))
	}
	v.add(FigFootDecodedFull, perPod(before, LiveHeap()))
	runtime.KeepAlive(full)
	full = nil
	runtime.GC()
	before = LiveHeap()
	pods := make([]any, n)
	for i := range pods {
		p := l.ServerPod(i, strconv.Itoa(1000+i))
		p.ManagedFields = nil
		pods[i] = p
	}
	mid := LiveHeap()
	v.add(FigFootDecoded, perPod(before, mid))
	cg := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	if err := cg.Replace(pods, "1"); err != nil {
		return nil, err
	}
	v.add(FigFootClientGoStore, perPod(mid, LiveHeap()))
	runtime.KeepAlive(cg)
	cg = nil

	// deltacache: the payload, then each layer of the store.
	pc, err := storagecodec.NewProtobuf(&corev1.Pod{})
	if err != nil {
		return nil, err
	}
	before = LiveHeap()
	payload := make([][]byte, n)
	for i, p := range pods {
		if payload[i], err = pc.Encode(p); err != nil {
			return nil, err
		}
	}
	withPayload := LiveHeap()
	runtime.KeepAlive(payload)
	// The payload's own figure leaves out the slice header that held it here (the store
	// keeps it in its record).
	v.add(FigFootPayload, perPod(before, withPayload)-24)
	payload = nil
	compressed, err := compressedPayloadPerPod(pods)
	if err != nil {
		return nil, err
	}
	v.add(FigFootCompressed, compressed)
	intern := map[string]string{}
	interned := func(s string) string {
		if v, ok := intern[s]; ok {
			return v
		}
		intern[s] = s
		return s
	}
	label := func(obj any) ([]string, error) {
		p := obj.(*corev1.Pod)
		app := p.Labels[appLabel]
		return []string{interned(app)}, nil
	}
	node := func(obj any) ([]string, error) {
		p := obj.(*corev1.Pod)
		return []string{interned(p.Spec.NodeName)}, nil
	}
	layers := []struct {
		fig      string
		indexers toolscache.Indexers
	}{
		{FigFootStore, nil},
		{FigFootNamespaceIndex, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}},
		{FigFootLabelFieldIndex, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
			"label:" + appLabel: label, "field:spec.nodeName": node}},
	}
	var prev float64
	for i, layer := range layers {
		runtime.GC()
		before := LiveHeap()
		cc, err := storagecodec.NewCompressed(pc, storagecodec.CompressedOptions{})
		if err != nil {
			return nil, err
		}
		// pkg/cache's label and field indexes are namespace-scoped: one entry per
		// value, answered in controller-runtime's layout.
		ix := informer.NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, layer.indexers,
			informer.IndexerOptions{Codec: cc, NamespaceScoped: func(name string) bool {
				return name != toolscache.NamespaceIndex
			}})
		if err := ix.Replace(pods, "1"); err != nil {
			return nil, err
		}
		total := perPod(before, LiveHeap())
		if i == 0 {
			// The store's figure is what it adds to the payload.
			v.add(layer.fig, total-v[FigFootCompressed][0])
		} else {
			v.add(layer.fig, total-prev)
		}
		prev = total
		runtime.KeepAlive(ix)
	}
	runtime.KeepAlive(pods)
	pods = nil
	return v, measureRealisticFootprint(n, v)
}

// compressedPayloadPerPod returns the live heap per pod of pods' records in a new
// Compressed codec around protobuf (as one informer's initial list makes them, in
// the pods' order), the slice header that holds each left out.
func compressedPayloadPerPod(pods []any) (float64, error) {
	pc, err := storagecodec.NewProtobuf(&corev1.Pod{})
	if err != nil {
		return 0, err
	}
	cc, err := storagecodec.NewCompressed(pc, storagecodec.CompressedOptions{})
	if err != nil {
		return 0, err
	}
	runtime.GC()
	before := LiveHeap()
	records := make([][]byte, len(pods))
	for i, p := range pods {
		if records[i], err = cc.Encode(p); err != nil {
			return 0, err
		}
	}
	after := LiveHeap()
	runtime.KeepAlive(records)
	runtime.KeepAlive(cc)
	return HeapGrowth(before, after)/float64(len(pods)) - 24, nil
}

// measureRealisticFootprint adds to v the payload figures of n pods of the
// realistic population (informertest.Cluster), in key order as a list returns them.
func measureRealisticFootprint(n int, v Values) error {
	runtime.GC()
	before := LiveHeap()
	full := informertest.NewCluster(footprintClusterSeed).Pods(n)
	v.add(FigFootRealDecodedFull, HeapGrowth(before, LiveHeap())/float64(n))
	slices.SortFunc(full, func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	pods := make([]any, n)
	for i, p := range full {
		p.ManagedFields = nil
		pods[i] = p
	}
	runtime.GC()
	v.add(FigFootRealDecoded, HeapGrowth(before, LiveHeap())/float64(n))
	pc, err := storagecodec.NewProtobuf(&corev1.Pod{})
	if err != nil {
		return err
	}
	before = LiveHeap()
	payload := make([][]byte, n)
	for i, p := range pods {
		if payload[i], err = pc.Encode(p); err != nil {
			return err
		}
	}
	v.add(FigFootRealPayload, HeapGrowth(before, LiveHeap())/float64(n)-24)
	runtime.KeepAlive(payload)
	payload = nil
	compressed, err := compressedPayloadPerPod(pods)
	if err != nil {
		return err
	}
	v.add(FigFootRealCompressed, compressed)
	runtime.KeepAlive(pods)
	return nil
}
