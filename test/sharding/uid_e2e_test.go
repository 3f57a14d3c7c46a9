//go:build sharding

package sharding

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/deltacache/deltacache/internal/testenv"
	dcache "github.com/deltacache/deltacache/pkg/cache"
	"github.com/deltacache/deltacache/pkg/shard"
)

const (
	uidConfigMaps = 20000
	uidNamespace  = "uid-shard"
)

// uidReplica is one in-process cache sharding ConfigMaps by uid.
type uidReplica struct {
	id    string
	cache *dcache.Cache
}

func startUIDReplica(t *testing.T, cp *controlPlane, id string) *uidReplica {
	t.Helper()
	newCache := dcache.NewWith(dcache.WithSharding(dcache.Sharding{
		Ring: shard.Options{Namespace: uidNamespace, Name: "cms", Identity: id,
			LeaseDuration: leaseDuration, RenewInterval: time.Second},
		ByUID: []client.Object{&corev1.ConfigMap{}},
	}))
	c, err := newCache(cp.cfg, crcache.Options{Scheme: scheme,
		DefaultNamespaces: map[string]crcache.Config{uidNamespace: {}}})
	if err != nil {
		t.Fatal(err)
	}
	r := &uidReplica{id: id, cache: c.(*dcache.Cache)}
	if _, err := r.cache.GetInformer(context.Background(), &corev1.ConfigMap{}, crcache.BlockUntilSynced(false)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.cache.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: Start returned %v", id, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("%s: Start did not return", id)
		}
	})
	return r
}

// uidSplit checks that the replicas serve Assign's shares and that their caches hold
// every ConfigMap exactly once; it returns the count per replica.
func uidSplit(ctx context.Context, replicas []*uidReplica, n int) (map[string]int, error) {
	var ids []string
	for _, r := range replicas {
		ids = append(ids, r.id)
	}
	want := shard.Assign(ids)
	holder := map[string]string{}
	counts := map[string]int{}
	for _, r := range replicas {
		if st := r.cache.Ring().Status(); st.Serving != want[r.id] {
			return nil, fmt.Errorf("%s serves %d slots, its share is %d (members %v)", r.id, st.Serving.Len(),
				want[r.id].Len(), st.Members)
		}
		var list corev1.ConfigMapList
		if err := r.cache.List(ctx, &list, client.InNamespace(uidNamespace)); err != nil {
			return nil, err
		}
		for _, cm := range list.Items {
			if other, dup := holder[cm.Name]; dup {
				return nil, fmt.Errorf("%s is held by %s and %s", cm.Name, other, r.id)
			}
			holder[cm.Name] = r.id
		}
		counts[r.id] = len(list.Items)
	}
	for i := range n {
		if _, ok := holder[configMapName(i)]; !ok {
			return counts, fmt.Errorf("%s is held by no replica (%d of %d held)", configMapName(i), len(holder), n)
		}
	}
	if len(holder) != n {
		return counts, fmt.Errorf("the replicas hold %d distinct ConfigMaps, want %d", len(holder), n)
	}
	return counts, nil
}

// seriesSum adds the entries of testenv.Series named name, whatever their other labels.
func seriesSum(series map[string]float64, name string) float64 {
	total := 0.0
	for k, v := range series {
		if k == name || strings.HasPrefix(k, name+"{") {
			total += v
		}
	}
	return total
}

// testUIDSharding: three caches split 20k ConfigMaps by uid, each a third ±15 %,
// together exactly all (key sets compared); with the gate the server filters.
func testUIDSharding(t *testing.T, cp *controlPlane) {
	cs := clientset(t, cp.cfg)
	if err := createNamespaces(cs, []string{uidNamespace}); err != nil {
		t.Fatal(err)
	}
	seedTimed(t, "ConfigMaps", uidConfigMaps, func() error { return createConfigMaps(cs, uidNamespace, uidConfigMaps) })

	start := time.Now()
	replicas := []*uidReplica{startUIDReplica(t, cp, "cache-a"), startUIDReplica(t, cp, "cache-b"),
		startUIDReplica(t, cp, "cache-c")}
	ctx := context.Background()
	var counts map[string]int
	took := eventually(t, 2*time.Minute, "three caches split the ConfigMaps", func() error {
		var err error
		counts, err = uidSplit(ctx, replicas, uidConfigMaps)
		return err
	})
	report, err := shares(counts, uidConfigMaps, 0.15)
	t.Logf("uid sharding of %d ConfigMaps, settled %v after start (%v of it waiting for the split): %s",
		uidConfigMaps, time.Since(start).Round(time.Millisecond), took.Round(time.Millisecond), report)
	if err != nil {
		t.Error(err)
	}
	for _, r := range replicas {
		t.Logf("%s serves %d of %d slots", r.id, r.cache.Ring().Status().Serving.Len(), shard.NumSlots)
	}

	// The three caches of this process share the informer series: counters add up,
	// the server-filtering gauge is one informer's.
	series := testenv.Series(t, crmetrics.Registry, map[string]string{"kind": "ConfigMap"})
	serverFiltering := seriesSum(series, "deltacache_informer_shard_server_filtering")
	filtered := seriesSum(series, "deltacache_informer_shard_filtered_objects_total")
	listed := seriesSum(series, "deltacache_informer_list_objects_total")
	t.Logf("ConfigMap informers (ShardedListAndWatch=%v): server filtering %v; %v objects listed, %v dropped on the client",
		cp.gate, serverFiltering, listed, filtered)
	if cp.gate && (serverFiltering != 1 || filtered != 0) {
		t.Errorf("with the gate: server filtering %v, %v objects filtered on the client; want 1 and 0", serverFiltering, filtered)
	}
	if !cp.gate && (serverFiltering != 0 || filtered < uidConfigMaps) {
		t.Errorf("without the gate: server filtering %v, %v objects filtered on the client; want 0 and ≥ %d (two thirds of each cache's list)",
			serverFiltering, filtered, uidConfigMaps)
	}
}
