package cache

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/shard"
)

// TestNamespacesCreatedInABurstCostTheNamespaceShardedInformersAFewRelistsNotOneEach:
// 300 namespaces arriving within about half a second change the Pod informer's
// selector to all 600 namespaces with at most three relists (NamespaceDebounce).
func TestNamespacesCreatedInABurstCostTheNamespaceShardedInformersAFewRelistsNotOneEach(t *testing.T) {
	var objects []runtime.Object
	for i := range 300 {
		objects = append(objects, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("team-%03d", i), ResourceVersion: "5"}})
	}
	api := newFakeAPI(t, objects...)
	c := newTestCache(t, api, crcache.Options{}, WithSharding(Sharding{
		Ring:        shard.Options{Namespace: "ops", Name: "demo", Identity: "replica-0"},
		ByNamespace: []client.Object{&corev1.Pod{}},
	}))
	ctx := testCtx(t)
	inf, err := c.GetInformer(ctx, &corev1.Pod{}, crcache.BlockUntilSynced(false))
	if err != nil {
		t.Fatal(err)
	}
	startCache(t, c)
	w := c.sharder.namespaces
	// The ring cannot reach its (unreachable) API server: grant every slot by hand.
	if err := c.serveSlots(ctx, shard.AllSlots()); err != nil {
		t.Fatal(err)
	}
	pods := inf.(*informer.SharedIndexInformer)
	if got := len(pods.ShardSelector().Ranges); got != 300 {
		t.Fatalf("Pod selector has %d ranges, want one per namespace: 300", got)
	}
	lists := func() int { return api.listCallsOf(gvkPod) }
	var before int
	eventually(t, 5*time.Second, func() error {
		if before = lists(); before == 0 {
			return fmt.Errorf("no Pod list yet")
		}
		return nil
	})
	time.Sleep(2 * NamespaceDebounce) // the relist of the grant is done
	before = lists()

	// 300 namespaces arrive (as the Namespace informer's handler sees them).
	start := time.Now()
	for i := range 300 {
		ns := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("burst-%03d", i)}}
		if err := w.informer.GetStore().Add(ns); err != nil {
			t.Fatal(err)
		}
		select {
		case w.kick <- struct{}{}:
		default:
		}
		time.Sleep(time.Millisecond)
	}
	burst := time.Since(start)
	eventually(t, 5*time.Second, func() error {
		if got := len(pods.ShardSelector().Ranges); got != 600 {
			return fmt.Errorf("Pod selector has %d ranges, want 600", got)
		}
		return nil
	})
	time.Sleep(2 * NamespaceDebounce)
	relists := lists() - before
	t.Logf("300 namespaces over %v: %d Pod relists", burst.Round(time.Millisecond), relists)
	if relists < 1 || relists > 3 {
		t.Errorf("300 namespaces over %v cost %d Pod relists, want 1 to 3", burst.Round(time.Millisecond), relists)
	}
}

// eventually polls check every 20ms until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %v: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
