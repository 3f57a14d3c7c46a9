package cache

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/deltacache/deltacache/pkg/shard"
)

// blockingReconciler counts its calls and blocks the calls of namespace block until
// release is closed.
type blockingReconciler struct {
	calls   atomic.Int64
	block   string
	entered chan struct{}
	release chan struct{}
}

func (b *blockingReconciler) Reconcile(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
	b.calls.Add(1)
	if req.Namespace == b.block {
		close(b.entered)
		<-b.release
	}
	return reconcile.Result{}, nil
}

func newNamespaceShardedCache(t *testing.T) *Cache {
	t.Helper()
	c, err := newCache(&rest.Config{Host: unreachableHost}, crcache.Options{Mapper: testMapper()}, Config{
		Sharding: &Sharding{Ring: shard.Options{Namespace: "ops", Name: "demo", Identity: "replica-0"},
			ByNamespace: []client.Object{&corev1.Pod{}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func request(ns string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "app"}}
}

func TestShardedReconcilerHoldsTheReleaseOfASlotUntilItsRunningReconcileReturns(t *testing.T) {
	c := newNamespaceShardedCache(t)
	inner := &blockingReconciler{block: "team-a", entered: make(chan struct{}), release: make(chan struct{})}
	r, err := ShardedReconciler(c, &corev1.Pod{}, inner)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	// Nothing served yet: requests are skipped.
	if _, err := r.Reconcile(ctx, request("team-b")); err != nil || inner.calls.Load() != 0 {
		t.Fatalf("before any slot: err %v, %d calls; want a skip", err, inner.calls.Load())
	}
	c.sharder.guard.widen(shard.AllSlots()) // as serveSlots does after a grant

	reconciled := make(chan error, 1)
	go func() {
		_, err := r.Reconcile(ctx, request("team-a"))
		reconciled <- err
	}()
	<-inner.entered
	released := make(chan error, 1)
	go func() { released <- c.serveSlots(ctx, shard.Slots{}) }()

	// While team-a's reconcile runs, the release waits, and new requests of the slots
	// given up are skipped.
	select {
	case err := <-released:
		t.Fatalf("serveSlots returned (%v) while a reconcile of a slot given up was running", err)
	case <-time.After(300 * time.Millisecond):
	}
	calls := inner.calls.Load()
	if _, err := r.Reconcile(ctx, request("team-b")); err != nil || inner.calls.Load() != calls {
		t.Fatalf("a request during the release: err %v, calls %d → %d; want a skip", err, calls, inner.calls.Load())
	}
	close(inner.release)
	if err := <-reconciled; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-released:
		if err != nil {
			t.Fatalf("serveSlots: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serveSlots still waits after the reconcile returned")
	}
	if got := inner.calls.Load(); got != 1 {
		t.Errorf("inner reconciler called %d times, want 1", got)
	}
}

func TestShardedReconcilerReleaseFailsWithTheContextWhileAReconcileRuns(t *testing.T) {
	c := newNamespaceShardedCache(t)
	inner := &blockingReconciler{block: "team-a", entered: make(chan struct{}), release: make(chan struct{})}
	defer close(inner.release)
	r, err := ShardedReconciler(c, &corev1.Pod{}, inner)
	if err != nil {
		t.Fatal(err)
	}
	c.sharder.guard.widen(shard.AllSlots())
	go func() { _, _ = r.Reconcile(context.Background(), request("team-a")) }()
	<-inner.entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = c.serveSlots(ctx, shard.Slots{})
	if err == nil || !strings.Contains(err.Error(), "1 reconciles of the slots given up still running") {
		t.Fatalf("serveSlots = %v, want the running reconcile named", err)
	}
}

func TestShardedReconcilerRejectsAKindTheCacheDoesNotShard(t *testing.T) {
	c := newNamespaceShardedCache(t)
	if _, err := ShardedReconciler(c, &corev1.ConfigMap{}, &blockingReconciler{}); err == nil ||
		!strings.Contains(err.Error(), "ConfigMap is not sharded") {
		t.Fatalf("err = %v, want ConfigMap is not sharded", err)
	}
	plain, err := newCache(&rest.Config{Host: unreachableHost}, crcache.Options{Mapper: testMapper()}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	inner := &blockingReconciler{}
	if r, err := ShardedReconciler(plain, &corev1.ConfigMap{}, inner); err != nil || r != reconcile.Reconciler(inner) {
		t.Fatalf("without sharding: %v, %v; want the reconciler unchanged", r, err)
	}
}
