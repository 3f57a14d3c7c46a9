package informer

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// The two halves of the uid hash space.
var (
	lowerHalf = &ShardSelector{Field: ShardByUID, Ranges: []HashRange{{0, 1<<63 - 1}}}
	upperHalf = &ShardSelector{Field: ShardByUID, Ranges: []HashRange{{1 << 63, math.MaxUint64}}}
)

// uidsIn returns n deterministic uids whose hash sel selects (in = true) or
// does not (in = false).
func uidsIn(sel *ShardSelector, in bool, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		uid := fmt.Sprintf("uid-%d", i)
		if sel.ContainsHash(ShardHash(uid)) == in {
			out = append(out, uid)
		}
	}
	return out
}

// fakeServer matches shard selectors as kube-apiserver does.
func fakeServer(selector string, obj runtime.Object) (bool, error) { return serverMatch(selector, obj) }

// shardedFake holds pods low-0, low-1 (uids in the lower half) and high-0,
// high-1 (upper half) in namespace a.
func shardedFake() *informertest.Fake {
	f := informertest.New(&corev1.Pod{})
	for i, uid := range uidsIn(lowerHalf, true, 2) {
		f.Create(shardPod("a", fmt.Sprintf("low-%d", i), uid))
	}
	for i, uid := range uidsIn(upperHalf, true, 2) {
		f.Create(shardPod("a", fmt.Sprintf("high-%d", i), uid))
	}
	return f
}

func names(objs []any) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, keyOfObj(o))
	}
	sortStrings(out)
	return out
}

func TestShardedListAndWatchCarryTheShardSelector(t *testing.T) {
	f := shardedFake()
	f.ServeShardSelector(fakeServer)
	run := runReflector(t, f, reflectorOptions{ShardSelector: lowerHalf, DisableWatchList: true})
	reqs := waitRequests(t, f, 2)
	for _, r := range reqs[:2] {
		if r.Options.ShardSelector != lowerHalf.String() {
			t.Errorf("%s shardSelector = %q, want %q", r.Verb, r.Options.ShardSelector, lowerHalf.String())
		}
	}
	equalStrings(t, "store", run.store.all(), []string{"replace [a/low-0@2 a/low-1@3] rv=5"})
	if got := run.r.ServerSharding(); got != ServerShardingHonoured {
		t.Errorf("ServerSharding = %v, want honoured", got)
	}
}

func TestServerIgnoringTheShardSelectorIsFilteredOnTheClient(t *testing.T) {
	f := shardedFake() // ServeShardSelector not called: the server sends everything, without ShardInfo
	metrics := NewMetrics()
	s := newPodInformer(f, Options{ShardSelector: lowerHalf, DisableWatchList: true, Metrics: metrics})
	rec := newRecorder()
	reg := addHandler(t, s, rec)
	startInformer(t, s)
	waitSynced(t, reg.HasSyncedChecker())
	if got := s.ServerSharding(); got != ServerShardingIgnored {
		t.Errorf("ServerSharding = %v, want ignored", got)
	}
	// Live events outside the shard are dropped too.
	f.Create(shardPod("a", "high-2", uidsIn(upperHalf, true, 3)[2]))
	f.Create(shardPod("a", "low-2", uidsIn(lowerHalf, true, 3)[2]))
	eventually(t, 10*time.Second, "add of low-2", func() bool { return len(rec.forKey("a/low-2")) == 1 })
	equalStrings(t, "store", names(s.GetStore().List()), []string{"a/low-0", "a/low-1", "a/low-2"})
	equalStrings(t, "events", rec.all(), []string{"add a/low-0@2 initial", "add a/low-1@3 initial", "add a/low-2@7"})
	filtered := testutil.ToFloat64(metrics.shardFiltered.WithLabelValues("", "", "Pod", ShapeTyped))
	if filtered != 3 { // high-0 and high-1 listed, high-2 watched
		t.Errorf("shard_filtered_objects_total = %v, want 3", filtered)
	}
	want := `
# HELP deltacache_informer_shard_server_filtering For sharded informers: 1 when the server honours shardSelector (ShardInfo in its list), 0 when the informer filters on the client; absent before the first sharded list.
# TYPE deltacache_informer_shard_server_filtering gauge
deltacache_informer_shard_server_filtering{group="",kind="Pod",shape="typed",version=""} 0
`
	if err := testutil.CollectAndCompare(metrics, strings.NewReader(want), "deltacache_informer_shard_server_filtering"); err != nil {
		t.Error(err)
	}
}

func TestWatchListLearnsServerShardingFromAOneObjectList(t *testing.T) {
	for _, honoured := range []bool{true, false} {
		t.Run(fmt.Sprintf("honoured=%v", honoured), func(t *testing.T) {
			f := shardedFake()
			f.ServeWatchList(true)
			want := ServerShardingIgnored
			if honoured {
				f.ServeShardSelector(fakeServer)
				want = ServerShardingHonoured
			}
			run := runReflector(t, f, reflectorOptions{ShardSelector: upperHalf})
			reqs := waitRequests(t, f, 2)
			equalStrings(t, "requests", summarize(reqs[:2]), []string{`list rv="" limit=1`, reqWatchList})
			for _, r := range reqs[:2] {
				if r.Options.ShardSelector != upperHalf.String() {
					t.Errorf("%s shardSelector = %q", r.Verb, r.Options.ShardSelector)
				}
			}
			eventually(t, 10*time.Second, "the streamed list", func() bool { return len(run.store.all()) == 1 })
			equalStrings(t, "store", run.store.all(), []string{"replace [a/high-0@4 a/high-1@5] rv=5"})
			if got := run.r.ServerSharding(); got != want {
				t.Errorf("ServerSharding = %v, want %v", got, want)
			}
		})
	}
}

func TestSetShardSelectorEvictsWithoutDeleteAndDeliversTheNewShardAsAdds(t *testing.T) {
	for _, serverSide := range []bool{true, false} {
		t.Run(fmt.Sprintf("serverSide=%v", serverSide), func(t *testing.T) {
			f := shardedFake()
			if serverSide {
				f.ServeShardSelector(fakeServer)
			}
			metrics := NewMetrics()
			s := newPodInformer(f, Options{ShardSelector: lowerHalf, DisableWatchList: true, Metrics: metrics})
			rec := newRecorder()
			reg := addHandler(t, s, rec)
			startInformer(t, s)
			waitSynced(t, reg.HasSyncedChecker())

			must(t, s.SetShardSelector(testCtx(t), upperHalf))
			for _, key := range []string{"a/low-0", "a/low-1"} { // evicted before SetShardSelector returned
				if _, ok, _ := s.GetStore().GetByKey(key); ok {
					t.Errorf("%s is still stored after SetShardSelector returned", key)
				}
			}
			eventually(t, 10*time.Second, "the upper half", func() bool {
				return len(rec.forKey("a/high-0")) == 1 && len(rec.forKey("a/high-1")) == 1
			})
			equalStrings(t, "store", names(s.GetStore().List()), []string{"a/high-0", "a/high-1"})
			// A change of a pod that left the shard is not delivered.
			f.Update(shardPod("a", "low-0", uidsIn(lowerHalf, true, 1)[0]))
			f.Create(shardPod("a", "high-2", uidsIn(upperHalf, true, 3)[2]))
			eventually(t, 10*time.Second, "add of high-2", func() bool { return len(rec.forKey("a/high-2")) == 1 })
			equalStrings(t, "events", rec.all(), []string{
				"add a/low-0@2 initial", "add a/low-1@3 initial", "add a/high-0@4", "add a/high-1@5", "add a/high-2@7",
			})
			equalStrings(t, "store", names(s.GetStore().List()), []string{"a/high-0", "a/high-1", "a/high-2"})
			if got := testutil.ToFloat64(metrics.shardEvicted.WithLabelValues("", "", "Pod", ShapeTyped)); got != 2 {
				t.Errorf("shard_evicted_objects_total = %v, want 2", got)
			}
			// The hand-off's relist is counted as such, not as drift.
			for cause, want := range map[string]float64{relistCauseShard: 1, relistCauseDrift: 0} {
				if got := testutil.ToFloat64(metrics.relists.WithLabelValues("", "", "Pod", ShapeTyped, cause)); got != want {
					t.Errorf("relists_total{cause=%s} = %v, want %v", cause, got, want)
				}
			}
			lists := f.RequestsOf(informertest.VerbList)
			if len(lists) != 2 || lists[1].ShardSelector != upperHalf.String() {
				t.Errorf("lists = %d, the relist's shardSelector = %q", len(lists), lists[len(lists)-1].ShardSelector)
			}
		})
	}
}

func TestEmptyShardSelectorHoldsNothing(t *testing.T) {
	f := shardedFake()
	s := newPodInformer(f, Options{ShardSelector: &ShardSelector{Field: ShardByUID}, DisableWatchList: true})
	rec := newRecorder()
	reg := addHandler(t, s, rec)
	startInformer(t, s)
	waitSynced(t, reg.HasSyncedChecker())
	if n := len(s.GetStore().List()); n != 0 || rec.count() != 0 {
		t.Fatalf("store holds %d objects, handler got %v", n, rec.all())
	}
	must(t, s.SetShardSelector(testCtx(t), nil))
	eventually(t, 10*time.Second, "every pod", func() bool { return rec.count() == 4 })
	equalStrings(t, "store", names(s.GetStore().List()), []string{"a/high-0", "a/high-1", "a/low-0", "a/low-1"})
}

func TestDeltaFIFOSetFilterEvictsQueuedAndStoredKeysAndReplaceGivesThemNoTombstone(t *testing.T) {
	ix := NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, nil)
	low := uidsIn(lowerHalf, true, 2)
	high := uidsIn(upperHalf, true, 2)
	must(t, ix.Add(shardPod("a", "stored-low", low[0])))
	must(t, ix.Add(shardPod("a", "stored-high", high[0])))
	f := newDeltaFIFO(deltaFIFOOptions{KnownObjects: ix})
	must(t, f.Add(shardPod("a", "queued-low", low[1])))
	must(t, f.Add(shardPod("a", "queued-high", high[1])))

	evicted := f.SetFilter(upperHalf)
	sortStrings(evicted)
	equalStrings(t, "evicted", evicted, []string{"a/queued-low", "a/stored-low"})
	// Filtered out from now on: an add, and the low pods of a relist.
	must(t, f.Add(shardPod("a", "late-low", uidsIn(lowerHalf, true, 3)[2])))
	must(t, f.Replace([]any{
		shardPod("a", "stored-low", low[0]), shardPod("a", "stored-high", high[0]),
		shardPod("a", "queued-low", low[1]), shardPod("a", "queued-high", high[1]),
	}, "9"))
	var got []string
	for f.Len() > 0 {
		must(t, f.Pop(func(ds deltaList, _ bool) error {
			for _, d := range ds {
				got = append(got, fmt.Sprintf("%s %s", d.Type, keyOfObj(d.Object)))
			}
			return nil
		}))
	}
	equalStrings(t, "popped", got, []string{
		"Evicted a/queued-low", "Added a/queued-high", "Evicted a/stored-low", "Replaced a/stored-high",
	})
}

// blockingTransform returns a transform that, once armed, blocks the first
// object it is called with until release is closed, after signalling entered.
func blockingTransform(armed *atomic.Bool, entered, release chan struct{}) toolscache.TransformFunc {
	var once sync.Once
	return func(obj any) (any, error) {
		if armed.Load() {
			once.Do(func() {
				close(entered)
				<-release
			})
		}
		return obj, nil
	}
}

// A selector change is exact for objects in flight: an object the Reflector
// admitted under the old selector but not yet queued when the selector
// changes (in a list made with the old selector, or a watch event being
// transformed) is refused at the DeltaFIFO if the new selector leaves it out
// (it never reaches the store or a handler, not even as an add and a
// relist's delete), and reaches the store if the new selector has it.
func TestSetShardSelectorIsExactForObjectsInFlight(t *testing.T) {
	everything := &ShardSelector{Field: ShardByUID, Ranges: []HashRange{FullRange}}
	for _, path := range []string{"list", "watch"} {
		t.Run(path, func(t *testing.T) {
			f := shardedFake()
			var armed atomic.Bool
			entered, release := make(chan struct{}), make(chan struct{})
			armed.Store(path == "list") // blocks the first listed object
			s := newPodInformer(f, Options{ShardSelector: everything, DisableWatchList: true,
				Transform: blockingTransform(&armed, entered, release)})
			rec := newRecorder()
			reg := addHandler(t, s, rec)
			startInformer(t, s)
			initial := "initial"
			if path == "watch" {
				waitSynced(t, reg.HasSyncedChecker())
				equalStrings(t, "store before", names(s.GetStore().List()),
					[]string{"a/high-0", "a/high-1", "a/low-0", "a/low-1"})
				armed.Store(true)
				f.Update(shardPod("a", "low-0", uidsIn(lowerHalf, true, 1)[0]))
			}
			select {
			case <-entered:
			case <-time.After(10 * time.Second):
				t.Fatal("no object reached the transform")
			}
			// The object in the transform was admitted under the old selector.
			must(t, s.SetShardSelector(testCtx(t), upperHalf))
			close(release)
			waitSynced(t, reg.HasSyncedChecker())
			eventually(t, 10*time.Second, "the new shard settled", s.ShardSettled)
			eventually(t, 10*time.Second, "the relist applied", func() bool {
				return s.Indexer().LastStoreSyncResourceVersion() == f.ResourceVersion()
			})
			equalStrings(t, "store", names(s.GetStore().List()), []string{"a/high-0", "a/high-1"})
			var want []string
			if path == "watch" {
				want = []string{"add a/low-0@2 " + initial, "add a/low-1@3 " + initial}
			}
			equalStrings(t, "events of the old shard", append(rec.forKey("a/low-0"), rec.forKey("a/low-1")...), want)
			equalStrings(t, "events of the new shard", append(rec.forKey("a/high-0"), rec.forKey("a/high-1")...),
				[]string{"add a/high-0@4 " + initial, "add a/high-1@5 " + initial})
		})
	}
}
