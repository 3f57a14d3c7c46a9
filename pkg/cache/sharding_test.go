package cache

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/shard"
)

func TestWithShardingRejectsAnIncompleteConfiguration(t *testing.T) {
	ring := shard.Options{Namespace: "ops", Name: "demo", Identity: "replica-0"}
	for _, tc := range []struct {
		name     string
		sharding Sharding
		want     string
	}{
		{"no kind", Sharding{Ring: ring}, "at least one kind"},
		{"no identity", Sharding{Ring: shard.Options{Namespace: "ops", Name: "demo"},
			ByUID: []client.Object{&corev1.ConfigMap{}}}, "Identity are required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewWith(WithSharding(tc.sharding))(&rest.Config{Host: unreachableHost},
				crcache.Options{Mapper: testMapper()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestWithShardingShardsOnlyTheListedKindsAndStartsThemEmpty(t *testing.T) {
	c, err := newCache(&rest.Config{Host: unreachableHost}, crcache.Options{Mapper: testMapper()}, Config{
		Sharding: &Sharding{Ring: shard.Options{Namespace: "ops", Name: "demo", Identity: "replica-0"},
			ByUID: []client.Object{&corev1.ConfigMap{}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	if sel := c.shardSelectorFor(cm); sel == nil || !sel.Empty() {
		t.Errorf("ConfigMap informers start with %v, want an empty selector (no slot granted yet)", sel)
	}
	if sel := c.shardSelectorFor(pod); sel != nil {
		t.Errorf("Pod informers start with %v, want none (not sharded)", sel)
	}
	if c.Ring() == nil || c.Ring().Identity() != "replica-0" {
		t.Fatal("no ring, or not this replica's")
	}
	err = &NotInShardError{GVK: cm, Key: client.ObjectKey{Namespace: "a", Name: "x"}}
	if !errors.Is(err, ErrNotInShard) || !strings.Contains(err.Error(), "ConfigMap a/x") {
		t.Errorf("NotInShardError = %q, Is(ErrNotInShard) = %v", err, errors.Is(err, ErrNotInShard))
	}
}

func TestWithShardingRejectsAClusterScopedKindByNamespaceAndAKindShardedTwice(t *testing.T) {
	ring := shard.Options{Namespace: "ops", Name: "demo", Identity: "replica-0"}
	for _, tc := range []struct {
		name     string
		sharding Sharding
		want     string
	}{
		{"cluster-scoped", Sharding{Ring: ring, ByNamespace: []client.Object{&corev1.Node{}}},
			"Node is cluster-scoped: Sharding.ByNamespace applies to namespaced kinds only"},
		{"twice", Sharding{Ring: ring, ByUID: []client.Object{&corev1.Pod{}}, ByNamespace: []client.Object{&corev1.Pod{}}},
			"Pod is in both Sharding.ByUID and Sharding.ByNamespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewWith(WithSharding(tc.sharding))(&rest.Config{Host: unreachableHost},
				crcache.Options{Mapper: testMapper()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestNamespaceSelectorHoldsOneHashPerOwnedNamespaceSorted(t *testing.T) {
	c, err := newCache(&rest.Config{Host: unreachableHost}, crcache.Options{Mapper: testMapper()}, Config{
		Sharding: &Sharding{Ring: shard.Options{Namespace: "ops", Name: "demo", Identity: "replica-0"},
			ByNamespace: []client.Object{&corev1.Pod{}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	if sel := c.shardSelectorFor(pod); sel == nil || !sel.Empty() || sel.Field != informer.ShardByNamespace {
		t.Fatalf("Pod informers start with %v, want an empty namespace selector", sel)
	}
	w := c.sharder.namespaces
	var half shard.Slots
	for i := range shard.NumSlots / 2 {
		half.Add(i)
	}
	var want []informer.HashRange
	for i := range 40 {
		name := fmt.Sprintf("ns-%02d", i)
		ns := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := w.informer.GetStore().Add(ns); err != nil {
			t.Fatal(err)
		}
		if half.Has(shard.SlotOfNamespace(name)) {
			h := informer.ShardHash(name)
			want = append(want, informer.HashRange{First: h, Last: h})
		}
	}
	slices.SortFunc(want, func(a, b informer.HashRange) int { return cmp.Compare(a.First, b.First) })
	got := w.selector(half)
	if got.Field != informer.ShardByNamespace || !slices.Equal(got.Ranges, want) {
		t.Fatalf("selector = %v, want the %d one-hash ranges of the owned namespaces", got, len(want))
	}
	if len(want) < 10 || len(want) > 30 {
		t.Errorf("half the slots own %d of 40 namespaces: SlotOfNamespace does not spread them", len(want))
	}
	if sel := w.selector(shard.Slots{}); !sel.Empty() {
		t.Errorf("no slots: %v, want an empty selector", sel)
	}
}

// A second Start of a sharded cache returns errAlreadyStarted at once and
// starts no second ring (it used to run the ring again, then wait for that
// ring until the context ended).
func TestSecondStartOfAShardedCacheFailsAtOnce(t *testing.T) {
	c, err := newCache(&rest.Config{Host: unreachableHost}, crcache.Options{Mapper: testMapper()}, Config{
		Sharding: &Sharding{Ring: shard.Options{Namespace: "ops", Name: "demo", Identity: "replica-0"},
			ByUID: []client.Object{&corev1.ConfigMap{}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	first := make(chan error, 1)
	go func() { first <- c.Start(ctx) }()
	second := make(chan error, 1)
	go func() { second <- c.Start(ctx) }()
	// Either call may be the first: the one that returns while the context
	// is live must be the second.
	running := first
	select {
	case err := <-second:
		if !errors.Is(err, errAlreadyStarted) {
			t.Fatalf("the Start that returned first: %v, want errAlreadyStarted", err)
		}
	case err := <-first:
		if !errors.Is(err, errAlreadyStarted) {
			t.Fatalf("the Start that returned first: %v, want errAlreadyStarted", err)
		}
		running = second
	case <-time.After(5 * time.Second):
		t.Fatal("a second Start of a sharded cache did not return while the first runs")
	}
	cancel()
	select {
	case <-running:
	case <-time.After(10 * time.Second):
		t.Fatal("the running Start did not return after its context ended")
	}
}
