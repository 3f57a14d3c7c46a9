package cache_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	dcache "github.com/deltacache/deltacache/pkg/cache"
	"github.com/deltacache/deltacache/pkg/shard"
)

// shardedReplica is one sharded cache of the test, as one replica of an operator runs it.
type shardedReplica struct {
	id      string
	cache   *dcache.Cache
	cancel  context.CancelFunc
	done    chan error
	deletes atomic.Int64 // Delete notifications its handler received
}

const testLeaseDuration = 6 * time.Second

// startShardedReplica starts a sharded cache; crashy ones leave their Lease to expire
// when stopped, as a killed process does.
func startShardedReplica(t *testing.T, ns, id string, crashy bool) *shardedReplica {
	t.Helper()
	c := newEnvCache(t, crcache.Options{DefaultNamespaces: map[string]crcache.Config{ns: {}}},
		dcache.WithSharding(dcache.Sharding{
			Ring: shard.Options{Namespace: ns, Name: "cms", Identity: id, LeaseDuration: testLeaseDuration,
				RenewInterval: time.Second, KeepLeaseOnStop: crashy},
			ByUID: []client.Object{&corev1.ConfigMap{}},
		}))
	return runReplica(t, id, c, &corev1.ConfigMap{})
}

// runReplica starts c with a handler on obj's informer that counts Delete
// notifications; the cache stops at the end of the test.
func runReplica(t *testing.T, id string, c *dcache.Cache, obj client.Object) *shardedReplica {
	t.Helper()
	r := &shardedReplica{id: id, cache: c, done: make(chan error, 1)}
	inf, err := c.GetInformer(context.Background(), obj, crcache.BlockUntilSynced(false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		DeleteFunc: func(any) { r.deletes.Add(1) },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- c.Start(ctx) }()
	t.Cleanup(r.stop)
	return r
}

// phantomMember writes in ringNS the Lease of a member of ring that claims no slot
// and stays unexpired for an hour, so that the replica id, started next as the only
// other member, serves its share of shard.Assign of the two, which it returns, from
// its first round: the phantom's slots are served by nobody.
func phantomMember(t *testing.T, cs kubernetes.Interface, ringNS, ring, id string) shard.Slots {
	t.Helper()
	now := metav1.NewMicroTime(time.Now())
	const phantom = "phantom"
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ringNS, Name: ring + "-" + phantom,
			Labels:      map[string]string{shard.RingLabel: ring},
			Annotations: map[string]string{shard.SlotsAnnotation: ""}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(phantom), AcquireTime: &now, RenewTime: &now,
			LeaseDurationSeconds: ptr.To(int32(3600))},
	}
	if _, err := cs.CoordinationV1().Leases(ringNS).Create(context.Background(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatalf("announcing the phantom member: %v", err)
	}
	return shard.Assign([]string{phantom, id})[id]
}

// startOnRing starts, on the control plane of c, a cache that shards as s (its Ring
// with the tests' Lease timing) and caches the objects of obj's kind labelled
// run=<run> only, and waits until its ring serves want and obj's informer has
// synced. httpClient, if not nil, carries its requests.
func startOnRing(t *testing.T, c *rest.Config, hc *http.Client, s dcache.Sharding, obj client.Object, run string,
	want shard.Slots, options ...dcache.Option,
) *shardedReplica {
	t.Helper()
	if hc == nil {
		var err error
		if hc, err = rest.HTTPClientFor(c); err != nil {
			t.Fatal(err)
		}
	}
	mapper, err := apiutil.NewDynamicRESTMapper(c, hc)
	if err != nil {
		t.Fatal(err)
	}
	s.Ring.LeaseDuration, s.Ring.RenewInterval = testLeaseDuration, time.Second
	sel := labels.SelectorFromSet(labels.Set{shardRunLabel: run})
	dc, err := dcache.NewWith(append(options, dcache.WithSharding(s))...)(c, crcache.Options{HTTPClient: hc, Mapper: mapper,
		ByObject: map[client.Object]crcache.ByObject{obj: {Label: sel}}})
	if err != nil {
		t.Fatal(err)
	}
	r := runReplica(t, s.Ring.Identity, dc.(*dcache.Cache), obj)
	eventually(t, 30*time.Second, func() error {
		if got := r.cache.Ring().Status().Serving; got != want {
			return fmt.Errorf("%s serves slots %v, want %v", r.id, got, want)
		}
		return nil
	})
	inf, err := r.cache.GetInformer(envCtx(t), obj)
	if err != nil {
		t.Fatal(err)
	}
	testenvWaitSynced(t, inf)
	return r
}

// shardRunLabel labels the objects of one run of a sharding test.
const shardRunLabel = "shard-run"

// testenvWaitSynced waits until inf has synced.
func testenvWaitSynced(t *testing.T, inf crcache.Informer) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		if !inf.HasSynced() {
			return errors.New("informer not synced")
		}
		return nil
	})
}

// namespacesOfSlots returns n namespace names prefix-<i> whose slot under namespace
// sharding is in slots (in = true) or is not (in = false).
func namespacesOfSlots(prefix string, slots shard.Slots, in bool, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		ns := fmt.Sprintf("%s-%d", prefix, i)
		if slots.Has(shard.SlotOfNamespace(ns)) == in {
			out = append(out, ns)
		}
	}
	return out
}

func (r *shardedReplica) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	<-r.done
}

// heldKeys returns the ConfigMaps the replica's cache holds.
func (r *shardedReplica) heldKeys(t *testing.T, ns string) []string {
	var list corev1.ConfigMapList
	if err := r.cache.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		return nil
	}
	out := make([]string, 0, len(list.Items))
	for _, cm := range list.Items {
		out = append(out, cm.Name)
	}
	return out
}

// settled reports whether the replicas serve exactly Assign's shares of one another
// and their caches together hold the n ConfigMaps, each once; counts per replica.
func settled(t *testing.T, ns string, n int, replicas []*shardedReplica) ([]int, error) {
	var ids []string
	for _, r := range replicas {
		ids = append(ids, r.id)
	}
	want := shard.Assign(ids)
	seen := map[string]string{}
	counts := make([]int, len(replicas))
	for i, r := range replicas {
		if st := r.cache.Ring().Status(); st.Serving != want[r.id] || len(st.Members) != len(replicas) {
			return nil, fmt.Errorf("%s serves %d slots of its %d, sees members %v", r.id, st.Serving.Len(),
				want[r.id].Len(), st.Members)
		}
		keys := r.heldKeys(t, ns)
		counts[i] = len(keys)
		for _, k := range keys {
			if other, dup := seen[k]; dup {
				return nil, fmt.Errorf("%s is held by %s and %s", k, other, r.id)
			}
			seen[k] = r.id
		}
	}
	if len(seen) != n {
		return nil, fmt.Errorf("the replicas hold %d distinct ConfigMaps, want %d", len(seen), n)
	}
	return counts, nil
}

func awaitSettled(t *testing.T, ns string, n int, replicas []*shardedReplica, timeout time.Duration) []int {
	t.Helper()
	var counts []int
	eventually(t, timeout, func() error {
		var err error
		counts, err = settled(t, ns, n, replicas)
		return err
	})
	return counts
}

// TestShardedCachesSplitConfigMapsByUIDAndTakeOverAReplicasShare runs three sharded
// caches on the shared control plane (without the ShardedListAndWatch gate, so each
// filters on the client): they split the ConfigMaps of a namespace, each about a
// third (±15%) and together exactly all, each once; when one leaves, the other two
// take its share; when it comes back, the shares are rebalanced; when one dies, its
// share is served by nobody until its Lease expires, then by the others. No handler ever
// receives a Delete: no ConfigMap is deleted, and hand-offs are not deletions.
func TestShardedCachesSplitConfigMapsByUIDAndTakeOverAReplicasShare(t *testing.T) {
	requireEnv(t)
	const n = 3000
	ns := createNamespace(t, "sharded")
	cs := kubernetes.NewForConfigOrDie(cfg)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%05d", i)}}
				if _, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	// envtest runs no namespace controller: the ConfigMaps would outlive the namespace
	// and weigh on the tests that cache every ConfigMap. Runs after the replicas stop.
	t.Cleanup(func() {
		_ = cs.CoreV1().ConfigMaps(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	if failed.Load() > 0 {
		t.Fatalf("%d ConfigMaps not created", failed.Load())
	}
	total := n // envtest runs no controller-manager: no kube-root-ca.crt

	replicas := []*shardedReplica{
		startShardedReplica(t, ns, "replica-a", false), startShardedReplica(t, ns, "replica-b", false),
		startShardedReplica(t, ns, "replica-c", true),
	}
	counts := awaitSettled(t, ns, total, replicas, 60*time.Second)
	for i, r := range replicas {
		dev := float64(counts[i])*3/float64(total) - 1
		t.Logf("%s holds %d of %d ConfigMaps (%+.1f%% of a third), %d slots", r.id, counts[i], total, 100*dev,
			r.cache.Ring().Status().Serving.Len())
		if dev < -0.15 || dev > 0.15 {
			t.Errorf("%s holds %d ConfigMaps, want a third ±15%%", r.id, counts[i])
		}
	}

	// A key another replica holds is not NotFound here.
	held := map[string]bool{}
	for _, k := range replicas[0].heldKeys(t, ns) {
		held[k] = true
	}
	for _, k := range replicas[1].heldKeys(t, ns)[:1] {
		err := replicas[0].cache.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: k}, &corev1.ConfigMap{})
		if !errors.Is(err, dcache.ErrNotInShard) {
			t.Errorf("Get of %s held by replica-b from replica-a = %v, want ErrNotInShard", k, err)
		}
	}

	// replica-b leaves: the others take its share.
	start := time.Now()
	replicas[1].stop()
	awaitSettled(t, ns, total, []*shardedReplica{replicas[0], replicas[2]}, 60*time.Second)
	t.Logf("replica-b left; its share was taken over in %v", time.Since(start).Round(10*time.Millisecond))

	// It comes back: rebalanced.
	start = time.Now()
	back := startShardedReplica(t, ns, "replica-b", false)
	counts = awaitSettled(t, ns, total, []*shardedReplica{replicas[0], back, replicas[2]}, 60*time.Second)
	t.Logf("replica-b came back; rebalanced in %v: %v", time.Since(start).Round(10*time.Millisecond), counts)

	// replica-c dies (its Lease stays): nobody serves its slots before the Lease
	// expires; then the others take them over.
	cSlots := replicas[2].cache.Ring().Status().Serving
	lastRenew := replicas[2].cache.Ring().Status().LastRenew
	replicas[2].stop()
	start = time.Now()
	for time.Since(lastRenew) < testLeaseDuration-500*time.Millisecond { // margin for the test's own lag
		for _, r := range []*shardedReplica{replicas[0], back} {
			if taken := r.cache.Ring().Status().Serving.Intersect(cSlots); !taken.IsEmpty() {
				t.Fatalf("%s serves %d of replica-c's slots %v after its last renewal, before its Lease expired",
					r.id, taken.Len(), time.Since(lastRenew))
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	awaitSettled(t, ns, total, []*shardedReplica{replicas[0], back}, 60*time.Second)
	t.Logf("replica-c killed; its share was taken over %v after it stopped (%v after its last renewal; Lease %v, renew %v)",
		time.Since(start).Round(10*time.Millisecond), time.Since(lastRenew).Round(10*time.Millisecond),
		testLeaseDuration, time.Second)

	for _, r := range append(replicas, back) {
		if d := r.deletes.Load(); d != 0 {
			t.Errorf("%s's handler received %d Delete notifications, want none", r.id, d)
		}
	}
}
