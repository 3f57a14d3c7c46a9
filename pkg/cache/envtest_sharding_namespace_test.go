package cache_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/deltacache/deltacache/internal/testenv"
	dcache "github.com/deltacache/deltacache/pkg/cache"
	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/shard"
)

// A second control plane, with the ShardedListAndWatch feature gate, started on first
// use and stopped by TestMain.
var (
	gatedOnce sync.Once
	gatedErr  error
	gatedEnv  *envtest.Environment
	gatedCfg  *rest.Config
)

func requireGatedEnv(t *testing.T) *rest.Config {
	t.Helper()
	requireEnv(t) // skips without binaries
	gatedOnce.Do(func() {
		gatedEnv = &envtest.Environment{BinaryAssetsDirectory: testenv.AssetsDir(filepath.Join("..", ".."))}
		gatedEnv.ControlPlane.GetAPIServer().Configure().Append("feature-gates", "ShardedListAndWatch=true")
		gatedCfg, gatedErr = gatedEnv.Start()
	})
	if gatedErr != nil {
		t.Fatalf("starting envtest with ShardedListAndWatch: %v", gatedErr)
	}
	return rest.CopyConfig(gatedCfg)
}

// nsReplica is one namespace-sharded cache of the test.
type nsReplica = shardedReplica

// nsWorld is the test's objects on one control plane.
type nsWorld struct {
	cfg      *rest.Config
	cs       kubernetes.Interface
	run      string // the label value of the test's Pods
	ringNS   string
	podsOfNS map[string]int // namespace → Pods created in it
}

const nsRunLabel = "nsshard-run"

func (w *nsWorld) startReplica(t *testing.T, id string) *nsReplica {
	t.Helper()
	hc, err := rest.HTTPClientFor(w.cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(w.cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	sel := labels.SelectorFromSet(labels.Set{nsRunLabel: w.run})
	c, err := dcache.NewWith(dcache.WithSharding(dcache.Sharding{
		Ring: shard.Options{Namespace: w.ringNS, Name: "apps", Identity: id, LeaseDuration: testLeaseDuration,
			RenewInterval: time.Second},
		ByNamespace: []client.Object{&corev1.Pod{}},
	}))(w.cfg, crcache.Options{HTTPClient: hc, Mapper: mapper,
		ByObject: map[client.Object]crcache.ByObject{&corev1.Pod{}: {Label: sel}}})
	if err != nil {
		t.Fatal(err)
	}
	return runReplica(t, id, c.(*dcache.Cache), &corev1.Pod{})
}

// createNamespaces creates the namespaces names with pods Pods each, eight at a time.
func (w *nsWorld) createNamespaces(t *testing.T, names []string, pods int) {
	t.Helper()
	if failed := eachNamespace(names, func(ns string) int {
		if _, err := w.cs.CoreV1().Namespaces().Create(context.Background(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return 1
		}
		failed := 0
		for i := range pods {
			failed += w.createPod(ns, i)
		}
		return failed
	}); failed > 0 {
		t.Fatalf("%d namespaces or Pods not created", failed)
	}
	for _, ns := range names {
		w.podsOfNS[ns] = pods
	}
}

// createPod creates Pod number index of the test in ns; it returns 1 if that
// failed, else 0.
func (w *nsWorld) createPod(ns string, index int) int {
	p := newPod(ns, fmt.Sprintf("pod-%d", index), map[string]string{nsRunLabel: w.run})
	if _, err := w.cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		return 1
	}
	return 0
}

// eachNamespace calls fn for every namespace of names, eight at a time, and
// returns the sum of what fn returned (the failures).
func eachNamespace(names []string, fn func(ns string) int) int {
	var wg sync.WaitGroup
	var failed atomic.Int64
	work := make(chan string)
	for range 8 {
		wg.Go(func() {
			for ns := range work {
				failed.Add(int64(fn(ns)))
			}
		})
	}
	for _, ns := range names {
		work <- ns
	}
	close(work)
	wg.Wait()
	return int(failed.Load())
}

// addPods creates Pod number index in each of the namespaces names.
func (w *nsWorld) addPods(t *testing.T, names []string, index int) {
	t.Helper()
	if failed := eachNamespace(names, func(ns string) int { return w.createPod(ns, index) }); failed > 0 {
		t.Fatalf("%d Pods not created", failed)
	}
	for _, ns := range names {
		w.podsOfNS[ns]++
	}
}

// held returns the namespaces of the Pods r holds, with their counts.
func (r *nsReplica) held() map[string]int {
	var list corev1.PodList
	if err := r.cache.List(context.Background(), &list); err != nil {
		return nil
	}
	out := map[string]int{}
	for _, p := range list.Items {
		out[p.Namespace]++
	}
	return out
}

// settledByNamespace reports whether the replicas serve Assign's shares of one another,
// each holds exactly the Pods of the namespaces whose slot it serves, and together they
// hold every Pod of the test once; it returns the namespaces per replica.
func (w *nsWorld) settledByNamespace(replicas []*nsReplica) ([]int, error) {
	var ids []string
	for _, r := range replicas {
		ids = append(ids, r.id)
	}
	want := shard.Assign(ids)
	owner := map[string]string{}
	counts := make([]int, len(replicas))
	for i, r := range replicas {
		st := r.cache.Ring().Status()
		if st.Serving != want[r.id] || len(st.Members) != len(replicas) {
			return nil, fmt.Errorf("%s serves %d slots of its %d, sees members %v", r.id, st.Serving.Len(),
				want[r.id].Len(), st.Members)
		}
		held := r.held()
		for ns, n := range held {
			if other, dup := owner[ns]; dup {
				return nil, fmt.Errorf("namespace %s is held by %s and %s", ns, other, r.id)
			}
			owner[ns] = r.id
			if !st.Serving.Has(shard.SlotOfNamespace(ns)) {
				return nil, fmt.Errorf("%s holds namespace %s, whose slot it does not serve", r.id, ns)
			}
			if n != w.podsOfNS[ns] {
				return nil, fmt.Errorf("%s holds %d Pods of %s, want %d", r.id, n, ns, w.podsOfNS[ns])
			}
		}
		counts[i] = len(held)
	}
	if len(owner) != len(w.podsOfNS) {
		return nil, fmt.Errorf("the replicas hold %d namespaces, want %d", len(owner), len(w.podsOfNS))
	}
	return counts, nil
}

func (w *nsWorld) awaitSettled(t *testing.T, replicas []*nsReplica, timeout time.Duration) []int {
	t.Helper()
	var counts []int
	eventually(t, timeout, func() error {
		var err error
		counts, err = w.settledByNamespace(replicas)
		return err
	})
	return counts
}

// TestNamespaceShardedCachesSplitNamespacesFollowNewOnesAndHandThemOver runs three
// caches that shard Pods by namespace over 300 namespaces of two Pods each, with the
// ShardedListAndWatch gate on (the server filters) and off (each filters on the
// client): each holds the Pods of the namespaces of its share of the slots (a binomial count
// within 5 standard deviations), exactly
// those whose slot it serves, together all, no namespace on two; a namespace created
// after the sync is picked up by exactly its owner; when a replica leaves, the others
// take its namespaces over; no handler receives a Delete.
//
// With the gate, each replica receives less than half the bytes of the watch events of
// one new Pod per namespace that it receives without (ReceivedBytes, the figure of
// deltacache_apiserver_received_bytes_total; Lease traffic included).
func TestNamespaceShardedCachesSplitNamespacesFollowNewOnesAndHandThemOver(t *testing.T) {
	received := map[bool][]int64{} // by gate: bytes each replica received until settled
	for _, gated := range []bool{true, false} {
		t.Run(fmt.Sprintf("gate=%v", gated), func(t *testing.T) {
			requireEnv(t)
			c := rest.CopyConfig(cfg)
			if gated {
				c = requireGatedEnv(t)
			}
			received[gated] = testNamespaceSharding(t, c, gated)
		})
	}
	if len(received[true]) == 3 && len(received[false]) == 3 {
		if on, off := slices.Max(received[true]), slices.Min(received[false]); 2*on >= off {
			t.Errorf("with the gate a replica received up to %d bytes, without at least %d: want less than half", on, off)
		}
	}
}

// testNamespaceSharding runs the scenario on c and returns the bytes each replica
// received from the API server for the watch events of one new Pod per namespace.
func testNamespaceSharding(t *testing.T, c *rest.Config, gated bool) []int64 {
	const namespaces, pods = 300, 2
	w := &nsWorld{cfg: c, cs: kubernetes.NewForConfigOrDie(c), run: rand.String(6), podsOfNS: map[string]int{}}
	w.ringNS = "ring-" + w.run
	w.createNamespaces(t, []string{w.ringNS}, 0)
	delete(w.podsOfNS, w.ringNS)
	var names []string
	for i := range namespaces {
		names = append(names, fmt.Sprintf("ns-%s-%03d", w.run, i))
	}
	start := time.Now()
	w.createNamespaces(t, names, pods)
	t.Logf("created %d namespaces × %d Pods in %v", namespaces, pods, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		// envtest runs no namespace controller: delete the Pods, which weigh on the
		// tests that cache every Pod, then the namespaces.
		var wg sync.WaitGroup
		work := make(chan string)
		for range 8 {
			wg.Go(func() {
				for ns := range work {
					_ = w.cs.CoreV1().Pods(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
					_ = w.cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
				}
			})
		}
		for ns := range maps.Keys(w.podsOfNS) {
			work <- ns
		}
		close(work)
		wg.Wait()
		_ = w.cs.CoreV1().Namespaces().Delete(context.Background(), w.ringNS, metav1.DeleteOptions{})
	})

	start = time.Now()
	replicas := []*nsReplica{w.startReplica(t, "replica-a"), w.startReplica(t, "replica-b"), w.startReplica(t, "replica-c")}
	counts := w.awaitSettled(t, replicas, 40*time.Second)
	t.Logf("settled in %v", time.Since(start).Round(time.Millisecond))
	for i, r := range replicas {
		// Namespaces fall into slots at random: a replica serving the fraction p of the
		// slots holds a binomial count, expected n·p, within 5 standard deviations (similar
		// names spread a little wider than independent draws: up to 3σ seen).
		p := float64(r.cache.Ring().Status().Serving.Len()) / shard.NumSlots
		expected, sd := namespaces*p, math.Sqrt(namespaces*p*(1-p))
		t.Logf("%s holds %d of %d namespaces (%.1f%%; %d slots, expected %.0f ± %.0f); received %d bytes from the API server",
			r.id, counts[i], namespaces, 100*float64(counts[i])/namespaces, r.cache.Ring().Status().Serving.Len(),
			expected, sd, r.cache.ReceivedBytes())
		if math.Abs(float64(counts[i])-expected) > 5*sd {
			t.Errorf("%s holds %d namespaces, want %.0f ± %.0f", r.id, counts[i], expected, 5*sd)
		}
		inf, err := r.cache.GetInformer(context.Background(), &corev1.Pod{})
		if err != nil {
			t.Fatal(err)
		}
		want := informer.ServerShardingIgnored
		if gated {
			want = informer.ServerShardingHonoured
		}
		if got := inf.(*informer.SharedIndexInformer).ServerSharding(); got != want {
			t.Errorf("%s: server sharding %v, want %v", r.id, got, want)
		}
	}

	// Watch traffic: one more Pod in every namespace. With the gate each replica
	// receives the events of its namespaces only.
	before := make([]int64, len(replicas))
	for i, r := range replicas {
		before[i] = r.cache.ReceivedBytes()
	}
	w.addPods(t, names, pods)
	w.awaitSettled(t, replicas, 20*time.Second)
	received := make([]int64, len(replicas))
	for i, r := range replicas {
		received[i] = r.cache.ReceivedBytes() - before[i]
		t.Logf("%s received %d bytes for the watch events of %d new Pods", r.id, received[i], namespaces)
	}

	// A namespace created after the sync goes to exactly one replica: its owner.
	late := "ns-" + w.run + "-late"
	start = time.Now()
	w.createNamespaces(t, []string{late}, pods)
	w.awaitSettled(t, replicas, 20*time.Second)
	var holders []string
	for _, r := range replicas {
		if r.held()[late] > 0 {
			holders = append(holders, r.id)
		}
	}
	if len(holders) != 1 {
		t.Fatalf("namespace %s created after the sync is held by %v, want exactly one replica", late, holders)
	}
	t.Logf("namespace created after the sync picked up by %s in %v", holders[0], time.Since(start).Round(time.Millisecond))

	// replica-b leaves: the others take its namespaces over.
	gone := replicas[1].held()
	start = time.Now()
	replicas[1].stop()
	rest := []*nsReplica{replicas[0], replicas[2]}
	w.awaitSettled(t, rest, 40*time.Second)
	t.Logf("replica-b left; its %d namespaces were taken over in %v", len(gone), time.Since(start).Round(time.Millisecond))
	for ns := range gone {
		n := 0
		for _, r := range rest {
			n += r.held()[ns]
		}
		if n != w.podsOfNS[ns] {
			t.Errorf("namespace %s of replica-b: %d Pods held by the others, want %d", ns, n, w.podsOfNS[ns])
		}
	}
	for _, r := range replicas {
		if d := r.deletes.Load(); d != 0 {
			t.Errorf("%s's handler received %d Delete notifications, want none", r.id, d)
		}
	}
	return received
}
