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
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dcache "github.com/deltacache/deltacache/pkg/cache"
	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/shard"
)

// ShardReplica says which member of which ring a section E child is. Replicas == 0
// means an unsharded cache (the baselines).
type ShardReplica struct {
	// Replicas is the number of members of the ring, all running at once.
	Replicas int `json:"replicas,omitempty"`
	// Ring is the ring's name, Namespace the Leases' namespace, Identity this
	// replica's (its Lease is Ring + "-" + Identity).
	Ring      string `json:"ring,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Identity  string `json:"identity,omitempty"`
	// Barrier is a directory where each replica, once measured, leaves a file named
	// after its Identity; it returns when Replicas files are there, so that no
	// replica leaves the ring (and hands its share to the others) while another is
	// still being measured.
	Barrier string `json:"barrier,omitempty"`
}

// ShardWorkload measures one replica of section E: Contender's cache (Deltacache with
// WithSharding when Replica.Replicas > 0) over the pods served at Config.
type ShardWorkload struct {
	Contender Contender
	Config    *rest.Config
	Replica   ShardReplica
	// Timeout bounds the wait for the share and for the barrier; 0 = 10 minutes.
	Timeout time.Duration
}

// Run builds and starts the cache, waits until it holds its share (see awaitShare),
// and returns one value of each of shardMeanFigures: FigShardBytes, FigShardHeap,
// FigHeapPerPod (per pod held), FigPeakRSS, FigSync and FigShardObjects. A sharded
// replica fails if the server did not filter by its shard selector (no feature gate).
// The cache stops when Run returns.
func (w ShardWorkload) Run(ctx context.Context) (Values, error) {
	timeout := w.Timeout
	if timeout == 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cfg := rest.CopyConfig(w.Config)
	bytes := &podBytesCounter{}
	cfg.Wrap(bytes.wrap)
	before := LiveHeap()
	cache, err := w.newCache(ctx, cfg)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := (&crCache{cache: cache}).Start(ctx); err != nil {
		return nil, err
	}
	if w.Replica.Replicas > 0 {
		if err := w.awaitShare(ctx, cache); err != nil {
			return nil, err
		}
	}
	synced := time.Since(start)
	received := bytes.total.Load()
	rss, err := PeakRSS()
	if err != nil {
		return nil, err
	}
	after := LiveHeap()
	var pods corev1.PodList
	if err := cache.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("%s: listing the pods held: %w", w.Contender, err)
	}
	held := len(pods.Items)
	pods.Items = nil
	if held == 0 {
		return nil, fmt.Errorf("%s %s: holds no pod", w.Contender, w.Replica.Identity)
	}
	heap := HeapGrowth(before, after)
	v := Values{}
	v.add(FigShardBytes, float64(received)/(1<<20))
	v.add(FigShardHeap, heap/(1<<20))
	v.add(FigHeapPerPod, heap/float64(held))
	v.add(FigPeakRSS, rss/(1<<20))
	v.add(FigSync, synced.Seconds())
	v.add(FigShardObjects, float64(held))
	if w.Replica.Replicas > 0 {
		if err := w.Replica.awaitBarrier(ctx); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// newCache builds the contender's cache with the spec.nodeName index, as section A
// does; a sharded replica is Deltacache's configuration plus WithSharding of pods by
// uid in w.Replica's ring.
func (w ShardWorkload) newCache(ctx context.Context, cfg *rest.Config) (crcache.Cache, error) {
	if w.Replica.Replicas == 0 {
		cut, err := NewCacheUnderTest(ctx, w.Contender, cfg, nil)
		if err != nil {
			return nil, err
		}
		c, ok := cut.(*crCache)
		if !ok {
			return nil, fmt.Errorf("%s is not a controller-runtime cache", w.Contender)
		}
		return c.cache, nil
	}
	if w.Contender != Deltacache {
		return nil, fmt.Errorf("%s cannot be sharded", w.Contender)
	}
	r := w.Replica
	cache, err := dcache.NewWith(dcache.WithLabelIndexes(appLabel), dcache.WithSharding(dcache.Sharding{
		Ring:  shard.Options{Namespace: r.Namespace, Name: r.Ring, Identity: r.Identity},
		ByUID: []client.Object{&corev1.Pod{}},
	}))(cfg, crcache.Options{Scheme: scheme.Scheme})
	if err != nil {
		return nil, err
	}
	if err := cache.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		return nil, err
	}
	return cache, nil
}

// awaitShare waits, after the cache synced, until the replica holds its share: the
// ring has w.Replica.Replicas members, the replica serves the slots it should serve
// among them, its pod informer has synced and listed with that shard (the last
// list's objects are the ones in the store, and there are some), and the server
// filtered by the selector. It fails at once if the server did not filter.
func (w ShardWorkload) awaitShare(ctx context.Context, c crcache.Cache) error {
	dc, ok := c.(*dcache.Cache)
	if !ok {
		return fmt.Errorf("%T is not deltacache's cache", c)
	}
	got, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return err
	}
	inf, ok := got.(*informer.SharedIndexInformer)
	if !ok {
		return fmt.Errorf("pod informer is a %T, want *informer.SharedIndexInformer", got)
	}
	ring := dc.Ring()
	var last string
	err = pollUntil(ctx, 5*time.Millisecond, func() bool {
		st := ring.Status()
		last = fmt.Sprintf("members %v, serving %d of its %d slots", st.Members, st.Serving.Len(), st.Target.Len())
		if len(st.Members) != w.Replica.Replicas || st.Target.IsEmpty() || st.Serving != st.Target {
			return false
		}
		if inf.ServerSharding() == informer.ServerShardingIgnored {
			return true // reported below
		}
		ls, ok := inf.LastListSummary()
		if !inf.HasSynced() || !ok || ls.Objects == 0 {
			return false
		}
		return len(inf.GetStore().ListKeys()) == ls.Objects
	})
	if err != nil {
		return fmt.Errorf("%s: not holding its share (%s): %w", w.Replica.Identity, last, err)
	}
	if s := inf.ServerSharding(); s != informer.ServerShardingHonoured {
		return fmt.Errorf("%s: the server's shard filtering is %s: start kube-apiserver with "+
			"--feature-gates=ShardedListAndWatch=true", w.Replica.Identity, s)
	}
	return nil
}

// awaitBarrier leaves this replica's file in r.Barrier and waits until r.Replicas
// files are there, or ctx ends.
func (r ShardReplica) awaitBarrier(ctx context.Context) error {
	if err := os.WriteFile(filepath.Join(r.Barrier, r.Identity), nil, 0o600); err != nil {
		return err
	}
	var seen int
	err := pollUntil(ctx, 20*time.Millisecond, func() bool {
		entries, err := os.ReadDir(r.Barrier)
		seen = len(entries)
		return err == nil && seen >= r.Replicas
	})
	if err != nil {
		return fmt.Errorf("%s: %d of %d replicas measured: %w", r.Identity, seen, r.Replicas, err)
	}
	return nil
}

// podBytesCounter counts the response-body bytes a client reads for pod requests
// (LIST pages and watch streams of paths ending in /pods), whichever cache made them.
// Leases, discovery and other kinds are not counted.
type podBytesCounter struct {
	total atomic.Int64
}

func (c *podBytesCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if resp != nil && resp.Body != nil && strings.HasSuffix(req.URL.Path, "/pods") {
			resp.Body = &countedBody{ReadCloser: resp.Body, total: &c.total}
		}
		return resp, err
	})
}

// countedBody adds the bytes read through it to total.
type countedBody struct {
	io.ReadCloser
	total *atomic.Int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.total.Add(int64(n))
	return n, err
}

// errNoShard is returned when a sharded child is given no identity or barrier.
var errNoShard = errors.New("a sharded replica needs Ring, Namespace, Identity and Barrier")

// validate checks r for a sharded replica.
func (r ShardReplica) validate() error {
	if r.Replicas > 0 && (r.Ring == "" || r.Namespace == "" || r.Identity == "" || r.Barrier == "") {
		return errNoShard
	}
	return nil
}
