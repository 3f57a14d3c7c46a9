package cache

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/shard"
)

// namespaceInSlot returns the first name prefix-<i> whose slot under namespace
// sharding is slot.
func namespaceInSlot(prefix string, slot int) string {
	for i := 0; ; i++ {
		if ns := fmt.Sprintf("%s-%d", prefix, i); shard.SlotOfNamespace(ns) == slot {
			return ns
		}
	}
}

// servingNamespaceShardedConfigMaps starts a cache over api whose ConfigMaps are
// sharded by namespace, makes it serve slot (calling serveSlots itself: the ring cannot
// reach an API server), and waits until its ConfigMap informer's shard settled.
func servingNamespaceShardedConfigMaps(t *testing.T, api *fakeAPI, slot int) (*Cache, *informer.SharedIndexInformer) {
	t.Helper()
	c := newTestCache(t, api, crcache.Options{}, WithSharding(Sharding{
		Ring:        shard.Options{Namespace: "ops", Name: "demo", Identity: "replica-0"},
		ByNamespace: []client.Object{&corev1.ConfigMap{}},
	}))
	ctx := testCtx(t)
	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{}, crcache.BlockUntilSynced(false))
	if err != nil {
		t.Fatal(err)
	}
	startCache(t, c)
	var serve shard.Slots
	serve.Add(slot)
	if err := c.serveSlots(ctx, serve); err != nil {
		t.Fatal(err)
	}
	cms := inf.(*informer.SharedIndexInformer)
	eventually(t, 5*time.Second, func() error {
		if !cms.ShardSettled() {
			return errors.New("the shard is not settled")
		}
		return nil
	})
	return c, cms
}

// getError is the error of a Get of namespace/name as a ConfigMap.
func getError(t *testing.T, c *Cache, namespace, name string) error {
	t.Helper()
	return c.Get(testCtx(t), client.ObjectKey{Namespace: namespace, Name: name}, &corev1.ConfigMap{})
}

func isNotInShard(err error) bool { return errors.Is(err, ErrNotInShard) && !apierrors.IsNotFound(err) }

// A namespace-sharded Get of an absent key: NotFound in a namespace whose objects the
// informer holds, and in a namespace that does not exist in a served slot;
// ErrNotInShard in a namespace of a slot not served, and in a served namespace the
// informer does not hold yet (the Namespace informer has it, the selector does not:
// within NamespaceDebounce), until the selector and its relist follow.
func TestNamespaceShardedGetOfAnAbsentKeyIsNotFoundOnlyWhereTheReplicaHoldsTheNamespace(t *testing.T) {
	mine := "team-a"
	slot := shard.SlotOfNamespace(mine)
	theirs := "team-b"
	if shard.SlotOfNamespace(theirs) == slot {
		t.Fatal("team-a and team-b share a slot")
	}
	ghost := namespaceInSlot("ghost", slot) // never created
	late := namespaceInSlot("late", slot)   // created during the test
	ns := func(name string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "5"}}
	}
	api := newFakeAPI(t, ns(mine), ns(theirs), configMap(mine, "x", nil), configMap(theirs, "x", nil))
	c, cms := servingNamespaceShardedConfigMaps(t, api, slot)
	if err := getError(t, c, mine, "x"); err != nil {
		t.Fatalf("Get of %s/x held: %v", mine, err)
	}
	if err := getError(t, c, mine, "absent"); !apierrors.IsNotFound(err) {
		t.Errorf("Get of %s/absent = %v, want NotFound", mine, err)
	}
	if err := getError(t, c, ghost, "x"); !apierrors.IsNotFound(err) {
		t.Errorf("Get of %s/x (no such namespace, in a served slot) = %v, want NotFound", ghost, err)
	}
	if err := getError(t, c, theirs, "x"); !isNotInShard(err) {
		t.Errorf("Get of %s/x (a slot not served) = %v, want ErrNotInShard", theirs, err)
	}

	// late appears in the Namespace informer; the selector follows only once kicked
	// and debounced.
	w := c.sharder.namespaces
	if err := w.informer.GetStore().Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: late}}); err != nil {
		t.Fatal(err)
	}
	if err := getError(t, c, late, "x"); !isNotInShard(err) {
		t.Errorf("Get of %s/x (namespace owned, not yet in the selector) = %v, want ErrNotInShard", late, err)
	}
	w.kick <- struct{}{}
	eventually(t, 5*time.Second, func() error {
		if err := getError(t, c, late, "x"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Get of %s/x once the selector has it = %v, want NotFound", late, err)
		}
		return nil
	})
	if !cms.ShardSelector().ContainsHash(informer.ShardHash(late)) {
		t.Errorf("the selector lacks %s, which answered NotFound", late)
	}
}

// A uid-sharded Get of an absent key is NotFound only while the replica serves every
// slot: the key carries no uid.
func TestUIDShardedGetOfAnAbsentKeyIsNotFoundOnlyWithEverySlot(t *testing.T) {
	api := newFakeAPI(t, configMap("a", "x", nil))
	c := newTestCache(t, api, crcache.Options{}, WithSharding(Sharding{
		Ring:  shard.Options{Namespace: "ops", Name: "demo", Identity: "replica-0"},
		ByUID: []client.Object{&corev1.ConfigMap{}},
	}))
	ctx := testCtx(t)
	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{}, crcache.BlockUntilSynced(false))
	if err != nil {
		t.Fatal(err)
	}
	startCache(t, c)
	cms := inf.(*informer.SharedIndexInformer)
	var half shard.Slots
	for i := range shard.NumSlots / 2 {
		half.Add(i)
	}
	for _, tc := range []struct {
		name     string
		slots    shard.Slots
		notFound bool
	}{{"every slot", shard.AllSlots(), true}, {"half the slots", half, false}, {"every slot again", shard.AllSlots(), true}} {
		if err := c.serveSlots(ctx, tc.slots); err != nil {
			t.Fatal(err)
		}
		eventually(t, 5*time.Second, func() error {
			if !cms.ShardSettled() {
				return errors.New("shard not settled")
			}
			return nil
		})
		err := getError(t, c, "a", "absent")
		if tc.notFound && !apierrors.IsNotFound(err) || !tc.notFound && !isNotInShard(err) {
			t.Errorf("%s: Get of an absent key = %v, want NotFound %v (else ErrNotInShard)", tc.name, err, tc.notFound)
		}
	}
}

func TestWholeHashSpace(t *testing.T) {
	for _, tc := range []struct {
		sel  *informer.ShardSelector
		want bool
	}{
		{nil, true},
		{&informer.ShardSelector{Ranges: shard.AllSlots().HashRanges()}, true},
		{&informer.ShardSelector{Ranges: []informer.HashRange{{First: 0, Last: 1<<63 - 1}, {First: 1 << 63, Last: 1<<64 - 1}}}, true},
		{&informer.ShardSelector{}, false},
		{&informer.ShardSelector{Ranges: []informer.HashRange{{First: 0, Last: 1<<63 - 1}}}, false},
		{&informer.ShardSelector{Ranges: []informer.HashRange{{First: 1, Last: 1<<64 - 1}}}, false},
		{&informer.ShardSelector{Ranges: []informer.HashRange{{First: 0, Last: 5}, {First: 7, Last: 1<<64 - 1}}}, false},
	} {
		if got := wholeHashSpace(tc.sel); got != tc.want {
			t.Errorf("wholeHashSpace(%v) = %v, want %v", tc.sel, got, tc.want)
		}
	}
}

// Slots gained that bring no namespace leave a namespace-sharded informer's selector
// as it was (equal, though built anew): a Get of an absent key of a served namespace
// stays NotFound. Before, the informer took the new selector value without relisting,
// and its shard never read as settled again: ErrNotInShard until the next real change.
func TestNamespaceShardedGetStaysNotFoundWhenSlotsChangeButNotTheNamespaces(t *testing.T) {
	mine := "team-a"
	slot := shard.SlotOfNamespace(mine)
	other := (slot + 1) % shard.NumSlots // no namespace of the test is in it
	api := newFakeAPI(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mine, ResourceVersion: "5"}},
		configMap(mine, "x", nil))
	c, cms := servingNamespaceShardedConfigMaps(t, api, slot)
	if err := getError(t, c, mine, "absent"); !apierrors.IsNotFound(err) {
		t.Fatalf("Get of %s/absent = %v, want NotFound", mine, err)
	}
	var serve shard.Slots
	serve.Add(slot)
	serve.Add(other)
	if err := c.serveSlots(testCtx(t), serve); err != nil {
		t.Fatal(err)
	}
	if !cms.ShardSettled() {
		t.Error("ShardSettled after gaining a slot without namespaces = false, want true")
	}
	if err := getError(t, c, mine, "absent"); !apierrors.IsNotFound(err) {
		t.Errorf("Get of %s/absent after gaining a slot without namespaces = %v, want NotFound", mine, err)
	}
}
