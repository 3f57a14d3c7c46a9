package cache_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// TestShardedReconcilerOfAUIDShardedKindRunsHeldKeysAndSkipsOthers: a replica alone in
// its ring serves every slot; a request of a ConfigMap it holds is reconciled, one of a
// key it does not hold is skipped without error.
func TestShardedReconcilerOfAUIDShardedKindRunsHeldKeysAndSkipsOthers(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "sharded-reconciler")
	create(t, newConfigMap(ns, "held", nil, nil))
	r := startShardedReplica(t, ns, "alone", false)
	eventually(t, 30*time.Second, func() error {
		if keys := r.heldKeys(t, ns); len(keys) != 1 {
			return errKeys(keys)
		}
		return nil
	})
	var calls atomic.Int64
	rec, err := dcache.ShardedReconciler(r.cache, &corev1.ConfigMap{}, reconcile.Func(
		func(context.Context, reconcile.Request) (reconcile.Result, error) {
			calls.Add(1)
			return reconcile.Result{}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := envCtx(t)
	if _, err := rec.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "held"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "absent"}}); err != nil {
		t.Fatalf("a key not held: %v, want a skip without error", err)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("inner reconciler called %d times, want 1 (held key only)", got)
	}
}

type errKeys []string

func (e errKeys) Error() string { return "held keys: " + strings.Join(e, ",") }
