package informer_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/deltacache/deltacache/internal/testenv"
	"github.com/deltacache/deltacache/pkg/informer"
)

// The control plane with the ShardedListAndWatch feature gate (KEP-5866),
// started on first use; the shared one (requireAPIServer) runs without it.
var (
	gatedOnce sync.Once
	gatedErr  error
	gatedEnv  *envtest.Environment
	gatedCfg  *rest.Config
)

func requireGatedAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	requireAPIServer(t) // skips without binaries
	gatedOnce.Do(func() {
		gatedEnv = &envtest.Environment{BinaryAssetsDirectory: testenv.AssetsDir(filepath.Join("..", ".."))}
		gatedEnv.ControlPlane.GetAPIServer().Configure().Append("feature-gates", "ShardedListAndWatch=true")
		gatedCfg, gatedErr = gatedEnv.Start() // stopped by TestMain
	})
	if gatedErr != nil {
		t.Fatalf("starting envtest with ShardedListAndWatch: %v", gatedErr)
	}
	return rest.CopyConfig(gatedCfg)
}

// thirds splits the hash space into three ranges.
func thirds(field informer.ShardField) []*informer.ShardSelector {
	third := uint64(math.MaxUint64 / 3)
	return []*informer.ShardSelector{
		{Field: field, Ranges: []informer.HashRange{{First: 0, Last: third}}},
		{Field: field, Ranges: []informer.HashRange{{First: third + 1, Last: 2 * third}}},
		{Field: field, Ranges: []informer.HashRange{{First: 2*third + 1, Last: math.MaxUint64}}},
	}
}

// seedConfigMaps creates n ConfigMaps in a new namespace, eight at a time.
func seedConfigMaps(t *testing.T, cs kubernetes.Interface, n int) string {
	t.Helper()
	ns, _ := seedNamespace(t, cs, "shard", 0)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%05d", i)}}
				if _, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	// envtest runs no namespace controller: delete them for the tests that follow.
	t.Cleanup(func() {
		_ = cs.CoreV1().ConfigMaps(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return ns
}

// TestShardedInformersSplitConfigMapsByUID runs three informers, one per third
// of the uid hash space, on a server with the gate (the server filters) and
// on one without (each informer filters on the client): each holds about a
// third of the ConfigMaps, and together exactly all of them, each once.
func TestShardedInformersSplitConfigMapsByUID(t *testing.T) {
	const n = 2000
	for _, gated := range []bool{true, false} {
		t.Run(fmt.Sprintf("gate=%v", gated), func(t *testing.T) {
			cfg := requireAPIServer(t)
			want := informer.ServerShardingIgnored
			if gated {
				cfg = requireGatedAPIServer(t)
				want = informer.ServerShardingHonoured
			}
			cs := kubernetes.NewForConfigOrDie(cfg)
			ns := seedConfigMaps(t, cs, n)
			server := serverState(t, cs, ns)
			if len(server) != n {
				t.Fatalf("server holds %d ConfigMaps, want %d", len(server), n)
			}
			client, err := rest.RESTClientFor(restConfigFor(cfg))
			if err != nil {
				t.Fatal(err)
			}
			union := map[string]string{}
			for i, sel := range thirds(informer.ShardByUID) {
				lw := &recordingLW{ListWatch: informer.NewRESTListWatch(client, "configmaps", true,
					scheme.ParameterCodec, informer.ListWatchOptions{Namespace: ns, AllowWatchBookmarks: true})}
				s := informer.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, informer.Options{ShardSelector: sel})
				runSynced(t, s)
				if got := s.ServerSharding(); got != want {
					t.Errorf("shard %d: ServerSharding = %v, want %v", i, got, want)
				}
				held := storeState(t, s.GetStore(), schema.GroupVersionKind{})
				t.Logf("shard %d holds %d of %d ConfigMaps (%+.1f%% of a third)", i, len(held), n,
					100*(float64(len(held))*3/n-1))
				if lo, hi := n/3*85/100, n/3*115/100; len(held) < lo || len(held) > hi {
					t.Errorf("shard %d holds %d ConfigMaps, want within [%d, %d]", i, len(held), lo, hi)
				}
				for k, rv := range held {
					if _, dup := union[k]; dup {
						t.Errorf("%s is held by two shards", k)
					}
					union[k] = rv
				}
				_, watches := lw.requests()
				if len(watches) == 0 || watches[0].ShardSelector != sel.String() {
					t.Errorf("shard %d: watch requests %d, shardSelector of the first %q", i, len(watches), sel.String())
				}
			}
			equalState(t, "union of the shards", union, server)
		})
	}
}

// restConfigFor is cfg set up for a typed REST client of core/v1.
func restConfigFor(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	c.ContentType = "application/vnd.kubernetes.protobuf"
	return c
}

// TestServerHashOfNamespacesIsClustered measures on the gated server what
// the issue reports: namespaces ns-00 … ns-19 all hash into the lower half
// of the FNV-1a space (their hashes begin 0x7e7), so a namespace
// shardSelector of equal ranges gives them all to one replica.
func TestServerHashOfNamespacesIsClustered(t *testing.T) {
	cfg := requireGatedAPIServer(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	for i := range 20 {
		ns := fmt.Sprintf("ns-%02d", i)
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hash-probe"}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil &&
			!apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	halves := []*informer.ShardSelector{
		{Field: informer.ShardByNamespace, Ranges: []informer.HashRange{{First: 0, Last: 1<<63 - 1}}},
		{Field: informer.ShardByNamespace, Ranges: []informer.HashRange{{First: 1 << 63, Last: math.MaxUint64}}},
	}
	counts := make([]int, 2)
	for h, sel := range halves {
		list, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{
			FieldSelector: "metadata.name=hash-probe", ShardSelector: sel.String()})
		if err != nil {
			t.Fatal(err)
		}
		if list.ShardInfo == nil || list.ShardInfo.Selector != sel.String() {
			t.Fatalf("half %d: ShardInfo = %+v, want the selector echoed", h, list.ShardInfo)
		}
		counts[h] = len(list.Items)
	}
	t.Logf("ns-00…ns-19 by the server's namespace hash: lower half %d, upper half %d", counts[0], counts[1])
	if counts[0] != 20 || counts[1] != 0 {
		t.Fatalf("halves hold %v of the 20 namespaces, want [20 0] (the issue's measurement)", counts)
	}
}
