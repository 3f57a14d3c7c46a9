package informer

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// checkLists serves ConsistencyCheck.List through f's own lists, which honour
// shardSelector when f.ServeShardSelector was called (as a server with the
// ShardedListAndWatch gate) and ignore it otherwise, and records the options
// of every list the check sent.
type checkLists struct {
	f    *informertest.Fake
	mu   sync.Mutex
	sent []metav1.ListOptions
}

func (c *checkLists) check() ConsistencyCheck {
	cc := metadataOf(c.f)
	cc.List = func(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
		c.mu.Lock()
		c.sent = append(c.sent, opts)
		c.mu.Unlock()
		obj, err := c.f.ListWithContext(ctx, opts)
		if err != nil {
			return nil, err
		}
		lm, err := meta.ListAccessor(obj)
		if err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(obj)
		if err != nil {
			return nil, err
		}
		out := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{
			ResourceVersion: lm.GetResourceVersion(), Continue: lm.GetContinue()}}
		for _, o := range items {
			m, _ := meta.Accessor(o)
			out.Items = append(out.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
				Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUID(), ResourceVersion: m.GetResourceVersion()}})
		}
		return out, nil
	}
	return cc
}

func (c *checkLists) selectors() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, o := range c.sent {
		out = append(out, o.ShardSelector)
	}
	return out
}

// A check of a sharded informer compares its shard only, and asks the server
// for that shard only: with a server that filters (the gate on) and one that
// ignores the selector (the check filters on the client). The other shard's
// objects, on the server and not in the store, are no drift.
func TestConsistencyCheckOfAShardComparesAndListsOnlyTheShard(t *testing.T) {
	for _, serverFilters := range []bool{true, false} {
		t.Run(fmt.Sprintf("serverFilters=%v", serverFilters), func(t *testing.T) {
			f := shardedFake()
			if serverFilters {
				f.ServeShardSelector(fakeServer)
			}
			lists := &checkLists{f: f}
			s := newPodInformer(f, Options{ShardSelector: lowerHalf, ConsistencyCheck: lists.check()})
			startInformer(t, s)
			waitSynced(t, s.HasSyncedChecker())
			eventually(t, 5*time.Second, "the first list settled", s.ShardSettled)
			equalStrings(t, "store", names(s.GetStore().List()), []string{"a/low-0", "a/low-1"})

			report, err := s.CheckConsistency(testCtx(t))
			must(t, err)
			if report.Drifted() || report.Objects != 2 || report.Skipped != "" {
				t.Errorf("report = %+v, want the 2 objects of the shard and no drift", report)
			}
			equalStrings(t, "shardSelector of the check's lists", lists.selectors(), []string{lowerHalf.String()})
		})
	}
}

// gatedLists holds back the lists that carry one shard selector until
// released, so that a test can look at an informer between a change of its
// selector and the relist that follows.
type gatedLists struct {
	*informertest.Fake
	hold    string // the shardSelector whose lists wait
	release chan struct{}
}

func (g *gatedLists) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if opts.ShardSelector == g.hold {
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Fake.ListWithContext(ctx, opts)
}

// Between a change of the shard selector and the relist that fills the store
// with the new shard, the store holds part of it at most: ShardSettled is
// false and a check compares nothing and sends no request (the new shard's
// objects are in flight, not missing). Once the relist is in, both see the new
// shard whole.
func TestConsistencyCheckSkipsWhileTheShardSelectorChanges(t *testing.T) {
	f := shardedFake()
	f.ServeShardSelector(fakeServer)
	lists := &checkLists{f: f}
	g := &gatedLists{Fake: f, hold: upperHalf.String(), release: make(chan struct{})}
	s := newPodInformer(g, Options{ShardSelector: lowerHalf, DisableWatchList: true, ConsistencyCheck: lists.check()})
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())
	eventually(t, 5*time.Second, "the first list settled", s.ShardSettled)

	must(t, s.SetShardSelector(testCtx(t), upperHalf))
	equalStrings(t, "store after the change", names(s.GetStore().List()), nil)
	if s.ShardSettled() {
		t.Error("ShardSettled before the relist of the new selector, want false")
	}
	report, err := s.CheckConsistency(testCtx(t))
	must(t, err)
	if report.Drifted() || report.Skipped == "" || report.Requests != 0 {
		t.Errorf("report during the change = %+v, want skipped, no drift, no request", report)
	}

	close(g.release)
	eventually(t, 5*time.Second, "the relist of the new selector settled", s.ShardSettled)
	for _, key := range []string{"a/high-0", "a/high-1"} {
		eventually(t, 5*time.Second, key+" applied", func() bool {
			_, final := s.ShardHolds(key)
			return final
		})
	}
	equalStrings(t, "store after the relist", names(s.GetStore().List()), []string{"a/high-0", "a/high-1"})
	report, err = s.CheckConsistency(testCtx(t))
	must(t, err)
	if report.Drifted() || report.Objects != 2 || report.Skipped != "" {
		t.Errorf("report after the relist = %+v, want the 2 objects of the new shard and no drift", report)
	}
	equalStrings(t, "shardSelector of the check's lists", lists.selectors(), []string{upperHalf.String()})
}

// A settled shard's relist is queued before it is in the store
// (ShardSettled: "in the store or queued for it"): a check that runs while
// the pop loop applies it finds the new shard's objects pending, not missing.
// Before, it counted them missing and relisted (the sharded soak found such
// "drift" in most runs).
func TestConsistencyCheckDoesNotCountAQueuedRelistAsMissing(t *testing.T) {
	f := shardedFake()
	f.ServeShardSelector(fakeServer)
	lists := &checkLists{f: f}
	block := make(chan struct{})
	var blocked sync.Once
	entered := make(chan struct{})
	// Decoded storage: the index functions run in the pop loop, so one that
	// waits for the new shard's objects holds the relist queued, unapplied.
	holdHigh := func(obj any) ([]string, error) {
		if m, err := meta.Accessor(obj); err == nil && len(m.GetName()) > 4 && m.GetName()[:4] == "high" {
			blocked.Do(func() { close(entered) })
			<-block
		}
		return nil, nil
	}
	// The relist of the new selector is served once the old shard's evictions are
	// applied: in one batch with them, a relisted object held by the index function
	// would hold them too, and SetShardSelector, which waits for them, forever (a
	// loaded machine's pop loop took both in one batch).
	var s *SharedIndexInformer
	lowGone := func() bool {
		for _, key := range []string{"a/low-0", "a/low-1"} {
			if _, ok, _ := s.GetStore().GetByKey(key); ok {
				return false
			}
		}
		return true
	}
	gated := &listGate{Fake: f, before: func(n int) {
		// On the Reflector's goroutine: no t.Fatal here; a wait that ends
		// unmet lets the test fail on what follows.
		for deadline := time.Now().Add(10 * time.Second); n > 1 && !lowGone() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}}
	s = newPodInformer(gated, Options{ShardSelector: lowerHalf, DisableWatchList: true,
		ConsistencyCheck: lists.check(), Indexers: map[string]toolscache.IndexFunc{"hold": holdHigh}})
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())
	eventually(t, 5*time.Second, "the first list settled", s.ShardSettled)

	must(t, s.SetShardSelector(testCtx(t), upperHalf))
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the relist of the new selector never reached the store")
	}
	// The pop loop may take the relist's first item before the Reflector,
	// its Replace returned, records the list (ListedShard); the index
	// function holds the rest unapplied meanwhile.
	eventually(t, 5*time.Second, "ShardSettled with the new selector's relist queued", s.ShardSettled)
	equalStrings(t, "store while the relist is applied", names(s.GetStore().List()), nil)
	report, err := s.CheckConsistency(testCtx(t))
	must(t, err)
	if report.Drifted() {
		t.Errorf("report while the relist is applied = %+v, want no drift (its objects are queued)", report)
	}

	close(block)
	for _, key := range []string{"a/high-0", "a/high-1"} {
		eventually(t, 5*time.Second, key+" applied", func() bool {
			_, final := s.ShardHolds(key)
			return final
		})
	}
	report, err = s.CheckConsistency(testCtx(t))
	must(t, err)
	if report.Drifted() || report.Objects != 2 {
		t.Errorf("report after the relist = %+v, want the 2 objects of the new shard and no drift", report)
	}
}

// Setting a selector equal to the current one (a new value: pkg/cache builds
// one per change of the served slots, and the namespaces of a namespace-sharded
// kind may stay the same when the slots do not) changes nothing: the shard
// stays settled, a key it would hold stays final (ShardHolds), and checks keep
// comparing. Before, the informer kept the new pointer but did not tell the
// Reflector, whose listed selector then never matched it again: ShardSettled
// and ShardHolds stayed false until the next real change (checks skipped, a
// deleted object of a served namespace ErrNotInShard instead of NotFound).
func TestSetShardSelectorToAnEqualSelectorKeepsTheShardSettled(t *testing.T) {
	f := shardedFake()
	f.ServeShardSelector(fakeServer)
	lists := &checkLists{f: f}
	s := newPodInformer(f, Options{ShardSelector: lowerHalf, DisableWatchList: true, ConsistencyCheck: lists.check()})
	startInformer(t, s)
	waitSynced(t, s.HasSyncedChecker())
	eventually(t, 5*time.Second, "the first list settled", s.ShardSettled)

	same := &ShardSelector{Field: lowerHalf.Field, Ranges: slices.Clone(lowerHalf.Ranges)}
	must(t, s.SetShardSelector(testCtx(t), same))
	if !s.ShardSettled() {
		t.Error("ShardSettled after setting an equal selector = false, want true")
	}
	if _, final := s.ShardHolds("a/absent"); !final {
		t.Error("ShardHolds(a/absent) after setting an equal selector: not final, want final")
	}
	report, err := s.CheckConsistency(testCtx(t))
	must(t, err)
	if report.Skipped != "" || report.Drifted() {
		t.Errorf("report after setting an equal selector = %+v, want a comparison without drift", report)
	}
}

// listGate is a Fake whose n-th LIST (from 1) first runs before(n).
type listGate struct {
	*informertest.Fake
	mu     sync.Mutex
	n      int
	before func(n int)
}

func (g *listGate) List(opts metav1.ListOptions) (runtime.Object, error) {
	return g.ListWithContext(context.Background(), opts)
}

func (g *listGate) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	g.mu.Lock()
	g.n++
	n := g.n
	g.mu.Unlock()
	g.before(n)
	return g.Fake.ListWithContext(ctx, opts)
}
