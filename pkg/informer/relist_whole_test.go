package informer

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/informer/codec"
	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// The relist of these tests is larger than maxPopBatch: relistBefore pods
// a/p00000… are listed first; the relist then finds the first relistUpdated
// of them updated (and moved from app=old to app=new), the next ones
// unchanged up to relistKept, the rest up to relistBefore deleted, and
// relistCreated pods created (app=new).
const (
	relistBefore  = 10_000
	relistUpdated = 5_000
	relistKept    = 9_000
	relistCreated = 1_500
	// relistCalls is what a handler with no resync period hears of the
	// relist: an update per updated pod, a delete per deleted one, an add
	// per created one (unchanged pods are resyncs, for nobody).
	relistCalls = relistUpdated + (relistBefore - relistKept) + relistCreated

	relistListRV = "30" // the relist's resourceVersion
	appOld       = "old"
	appNew       = "new"
	modeList     = "LIST"
	modeCompact  = "LIST+compact" // LIST with compact storage (StorageCodec)
)

// relistModes are the ways the tests below list: LIST, WatchList, and LIST
// into a compact store.
var relistModes = []string{modeList, modeWatchList, modeCompact}

// relistState is a store content: key → resourceVersion, and the keys filed
// under app=new.
type relistState struct {
	rv     map[string]string
	appNew map[string]bool
}

func relistPodName(i int) string { return fmt.Sprintf("p%05d", i) }

// relistStates returns the pods listed first and relisted, and both states.
func relistStates() (first, second []runtime.Object, before, after relistState) {
	before = relistState{rv: map[string]string{}, appNew: map[string]bool{}}
	after = relistState{rv: map[string]string{}, appNew: map[string]bool{}}
	for i := range relistBefore + relistCreated {
		name := relistPodName(i)
		key := "a/" + name
		if i < relistBefore {
			first = append(first, pod("a", name, "1", "app="+appOld))
			before.rv[key] = "1"
		}
		switch {
		case i < relistUpdated, i >= relistBefore:
			second = append(second, pod("a", name, "20", "app="+appNew))
			after.rv[key], after.appNew[key] = "20", true
		case i < relistKept:
			second = append(second, pod("a", name, "1", "app="+appOld))
			after.rv[key] = "1"
		}
	}
	return first, second, before, after
}

// relistStateOf names what objs (a List, or a ByIndex of app=new when
// onlyAppNew) shows: "before", "after" or, when it is neither state, "mixed"
// with the first differences.
func relistStateOf(objs []any, before, after relistState, onlyAppNew bool) string {
	matches := func(s relistState) (bool, string) {
		want := len(s.rv)
		if onlyAppNew {
			want = len(s.appNew)
		}
		for _, o := range objs {
			key, rv := keyOfObj(o), o.(*corev1.Pod).ResourceVersion
			if s.rv[key] != rv || (onlyAppNew && !s.appNew[key]) {
				return false, key + "@" + rv
			}
		}
		if len(objs) != want {
			return false, fmt.Sprintf("%d objects, want %d", len(objs), want)
		}
		return true, ""
	}
	okBefore, diffBefore := matches(before)
	okAfter, diffAfter := matches(after)
	switch {
	case okBefore:
		return "before"
	case okAfter:
		return "after"
	}
	return fmt.Sprintf("mixed (vs before: %s; vs after: %s)", diffBefore, diffAfter)
}

// relistRun is an informer that listed the first state and is ready to
// relist: its index function "app" is slowed down once slow is set, so that
// applying the relist takes about a second.
type relistRun struct {
	s      *SharedIndexInformer
	f      *informertest.Fake
	slow   atomic.Bool
	before relistState
	after  relistState
	// indexing is closed by the first call of the slow index function.
	indexing     chan struct{}
	indexingOnce sync.Once
	// relist makes the open watch fail with 410 Expired: the Reflector
	// relists.
	relist func()
}

// startRelistRun starts the informer in mode (see relistModes), with h as
// its handler, and waits until h has handled the first list.
func startRelistRun(t *testing.T, mode string, h toolscache.ResourceEventHandler) *relistRun {
	t.Helper()
	first, second, before, after := relistStates()
	r := &relistRun{f: informertest.New(&corev1.Pod{}), before: before, after: after, indexing: make(chan struct{})}
	opts := Options{Indexers: toolscache.Indexers{appLabel: func(obj any) ([]string, error) {
		if r.slow.Load() {
			r.indexingOnce.Do(func() { close(r.indexing) })
			for start := time.Now(); time.Since(start) < 80*time.Microsecond; {
			}
		}
		return labelIndex(appLabel)(obj)
	}}}
	stream := func(objs []runtime.Object, rv string) informertest.WatchResponse {
		events := make([]watch.Event, 0, len(objs)+1)
		for _, o := range objs {
			events = append(events, watch.Event{Type: watch.Added, Object: o})
		}
		return informertest.WatchResponse{Events: append(events, informertest.InitialEventsEndBookmark(&corev1.Pod{}, rv))}
	}
	switch mode {
	case modeWatchList:
		r.f.ServeWatchList(true)
		r.f.ScriptWatch(stream(first, "10"), stream(second, relistListRV))
	case modeCompact:
		pc, err := codec.NewProtobuf(&corev1.Pod{})
		must(t, err)
		opts.StorageCodec = pc
		fallthrough
	default:
		opts.DisableWatchList = true
		r.f.ScriptList(informertest.ListResponse{Items: first, ResourceVersion: "10"},
			informertest.ListResponse{Items: second, ResourceVersion: relistListRV})
		r.f.ScriptWatch(informertest.WatchResponse{}, informertest.WatchResponse{})
	}
	r.s = newPodInformer(r.f, opts)
	reg := addHandler(t, r.s, h)
	startInformer(t, r.s)
	waitSynced(t, reg.HasSyncedChecker())
	ctx := testCtx(t)
	r.relist = func() {
		w, err := r.f.WaitForWatch(ctx, 0)
		must(t, err)
		r.slow.Store(true)
		w.Error(informertest.ErrExpired())
	}
	return r
}

// storeState classifies what the informer's store holds now.
func (r *relistRun) storeState() string {
	return relistStateOf(r.s.GetIndexer().List(), r.before, r.after, false)
}

// relistChecker is a handler that, on every call after the first list,
// checks that the store holds the relisted state (Len and four probe keys
// each call, List and ByIndex on the first and every 500th).
type relistChecker struct {
	run        func() *relistRun
	calls      atomic.Int64
	mu         sync.Mutex
	violations []string
}

func (c *relistChecker) check(what string) {
	r := c.run()
	n := c.calls.Add(1)
	ix := r.s.Indexer()
	var bad []string
	if got, want := ix.Len(), len(r.after.rv); got != want {
		bad = append(bad, fmt.Sprintf("Len %d, want %d", got, want))
	}
	for _, i := range []int{0, relistUpdated - 1, relistBefore - 1, relistBefore + relistCreated - 1} {
		key := "a/" + relistPodName(i)
		obj, ok, _ := ix.GetByKey(key)
		got := "absent"
		if ok {
			got = obj.(*corev1.Pod).ResourceVersion
		}
		if want, stored := r.after.rv[key]; got != want && (stored || got != "absent") {
			bad = append(bad, fmt.Sprintf("%s is %s, relisted %q", key, got, want))
		}
	}
	if n == 1 || n%500 == 0 {
		if got := relistStateOf(ix.List(), r.before, r.after, false); got != "after" {
			bad = append(bad, "List: "+got)
		}
		objs, err := ix.ByIndex(appLabel, appNew)
		if err != nil {
			bad = append(bad, err.Error())
		}
		if got := relistStateOf(objs, r.before, r.after, true); got != "after" {
			bad = append(bad, "ByIndex(app, new): "+got)
		}
	}
	if len(bad) > 0 {
		c.mu.Lock()
		c.violations = append(c.violations, fmt.Sprintf("call %d (%s): %s", n, what, strings.Join(bad, "; ")))
		c.mu.Unlock()
	}
}

func (c *relistChecker) OnAdd(obj any, initial bool) {
	if !initial {
		c.check("add " + describe(obj))
	}
}
func (c *relistChecker) OnUpdate(_, obj any) { c.check("update " + describe(obj)) }
func (c *relistChecker) OnDelete(obj any)    { c.check("delete " + describe(obj)) }

// TestRelistHandlersSeeTheWholeRelistedStore: a relist of more keys than
// one pop batch (updates, unchanged objects, deletions and creations) is in
// the store before any handler hears of it, as client-go's atomic Replace
// installs it: every handler call during the relist's delivery reads the
// relisted state from the Indexer, never part of it.
func TestRelistHandlersSeeTheWholeRelistedStore(t *testing.T) {
	for _, mode := range []string{modeList, modeWatchList} {
		t.Run(mode, func(t *testing.T) {
			var r *relistRun
			c := &relistChecker{run: func() *relistRun { return r }}
			r = startRelistRun(t, mode, c)
			r.relist()
			eventually(t, 20*time.Second, "the relist's handler calls", func() bool { return c.calls.Load() >= relistCalls })
			c.mu.Lock()
			defer c.mu.Unlock()
			if len(c.violations) > 0 {
				t.Fatalf("%d of %d handler calls saw a store that is not the relisted one; first: %s",
					len(c.violations), c.calls.Load(), c.violations[0])
			}
			if got := c.calls.Load(); got != relistCalls {
				t.Fatalf("handler calls = %d, want %d", got, relistCalls)
			}
			if got := r.storeState(); got != "after" {
				t.Fatalf("store after the relist: %s", got)
			}
		})
	}
}

// TestRelistReadersSeeTheStoreBeforeOrAfterNeverBetween: while a relist of
// more keys than one pop batch is applied, a reader polling List, ByIndex
// and GetByKey sees the store as it was until the relist is complete and
// then as relisted: never a mix, never back, and never the relist's RV
// with the old content.
func TestRelistReadersSeeTheStoreBeforeOrAfterNeverBetween(t *testing.T) {
	for _, mode := range relistModes {
		t.Run(mode, func(t *testing.T) {
			r := startRelistRun(t, mode, toolscache.ResourceEventHandlerFuncs{})
			ix := r.s.GetIndexer()
			seen := map[string]int{}
			var violations []string
			done := make(chan struct{})
			go func() {
				defer close(done)
				deadline := time.Now().Add(20 * time.Second)
				// Reads in sequence: each shows the state before or after;
				// once one showed after, every later one must.
				sawAfter := false
				read := func(what, state string) {
					switch {
					case state != "before" && state != "after":
						violations = append(violations, what+": "+state)
					case sawAfter && state == "before":
						violations = append(violations, what+": back to the state before the relist")
					}
					sawAfter = sawAfter || state == "after"
				}
				probeKey := "a/" + relistPodName(relistUpdated-1)
				for time.Now().Before(deadline) {
					relisting := r.slow.Load()
					rv := r.s.Indexer().LastStoreSyncResourceVersion()
					if rv == relistListRV {
						read("store RV "+rv, "after")
					}
					list := relistStateOf(ix.List(), r.before, r.after, false)
					read("List", list)
					objs, _ := ix.ByIndex(appLabel, appNew)
					read("ByIndex(app, new)", relistStateOf(objs, r.before, r.after, true))
					probe, _, _ := ix.GetByKey(probeKey)
					probeState := map[string]string{"1": "before", "20": "after"}[probe.(*corev1.Pod).ResourceVersion]
					read("GetByKey("+probeKey+")", probeState)
					if relisting {
						seen[list]++
					}
					if len(violations) > 10 || rv == relistListRV {
						return
					}
				}
				violations = append(violations, "the relist did not complete in time")
			}()
			r.relist()
			<-done
			if len(violations) > 0 {
				t.Fatalf("reader: %d violations; first: %s (states seen: %v)", len(violations), violations[0], seen)
			}
			if seen["before"] == 0 || seen["after"] == 0 {
				t.Fatalf("after the 410, the reader did not see both states (%v): it did not read during the relist", seen)
			}
			t.Logf("states seen: %v", seen)
		})
	}
}

// relistReplay records what a handler added after start is replayed: the
// RV of every initial add, by key, and any other call.
type relistReplay struct {
	mu     sync.Mutex
	adds   map[string]string
	others []string
}

func (h *relistReplay) OnAdd(obj any, initial bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !initial {
		h.others = append(h.others, "add "+describe(obj))
		return
	}
	h.adds[keyOfObj(obj)] = obj.(*corev1.Pod).ResourceVersion
}
func (h *relistReplay) OnUpdate(_, obj any) { h.other("update " + describe(obj)) }
func (h *relistReplay) OnDelete(obj any)    { h.other("delete " + describe(obj)) }
func (h *relistReplay) other(call string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.others = append(h.others, call)
}

// TestRelistHandlerAddedDuringTheRelistIsReplayedTheRelistedStore: a
// handler added while a relist is being applied is replayed the store as
// relisted (a handler's replay is a snapshot of the store, taken between
// two batches), and hears nothing else of the relist.
func TestRelistHandlerAddedDuringTheRelistIsReplayedTheRelistedStore(t *testing.T) {
	r := startRelistRun(t, modeList, toolscache.ResourceEventHandlerFuncs{})
	r.relist()
	waitClosed(t, r.indexing, 20*time.Second, "the relist to be applied")
	h := &relistReplay{adds: map[string]string{}}
	reg := addHandler(t, r.s, h)
	waitSynced(t, reg.HasSyncedChecker())
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.others) > 0 {
		t.Fatalf("the handler heard %d calls besides its replay; first: %s", len(h.others), h.others[0])
	}
	if len(h.adds) != len(r.after.rv) {
		t.Fatalf("replayed %d objects, the relisted store holds %d", len(h.adds), len(r.after.rv))
	}
	for key, rv := range r.after.rv {
		if h.adds[key] != rv {
			t.Fatalf("replayed %s at RV %q, relisted at %q", key, h.adds[key], rv)
		}
	}
}
