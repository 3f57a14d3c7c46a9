package informer

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// The differential tests run one scripted scenario through client-go's
// SharedIndexInformer (the reference) and ours, both fed by the same
// informertest.Fake, and compare the final stores and what each handler saw.
//
// Deliberate differences, pinned where they show:
//   - Coalescing: our handler queue merges the notifications of one key that
//     wait for a busy handler (Update+Update → one Update from the oldest
//     old to the newest new); client-go delivers every one. Final views
//     agree; the counts differ (TestDifferentialBurstIsCoalescedOnlyByUs).
//   - A delete seen only through a relist reaches OnDelete as a
//     DeletedFinalStateUnknown tombstone in both, but whether a delete is
//     seen through the watch or the relist depends on timing, so the
//     per-key sequences compare "delete" without the payload.
//   - Unchanged objects of a relist: both informers turn a relisted object
//     whose resourceVersion did not change into an update that only handlers
//     due for resync receive. client-go marks every handler "due" from its
//     registration until its first resync check, which never comes when no
//     handler has a resync period; so with resync 0 its handlers get
//     OnUpdate(obj@rv, obj@rv) for every unchanged object of a relist, ours
//     get nothing (TestDifferentialScenarioMatchesClientGo removes and pins
//     them).
//   - Our relists are consistent reads (RV ""), client-go's first list is at
//     RV "0" and relists at the last RV; the Fake answers them alike.

// diffHandler records, per key, the notifications of one handler as
// "add@rv[ initial]", "update@old->new", "delete".
type diffHandler struct{ *recorder }

func newDiffHandler() *diffHandler { return &diffHandler{newRecorder()} }

func (h *diffHandler) OnAdd(obj any, initial bool) {
	e := "add@" + rvOf(obj)
	if initial {
		e += initialSuffix
	}
	h.record(keyOfObj(obj), e)
}

func (h *diffHandler) OnUpdate(oldObj, newObj any) {
	h.record(keyOfObj(newObj), "update@"+rvOf(oldObj)+"->"+rvOf(newObj))
}

func (h *diffHandler) OnDelete(obj any) { h.record(keyOfObj(obj), verbDelete) }

// view is the handler's last-seen state per key: the RV of its last add or
// update, keys whose last notification was a delete left out.
func (h *diffHandler) view() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]string{}
	for key, events := range h.byKey {
		last := events[len(events)-1]
		if last == verbDelete {
			continue
		}
		rv := strings.TrimSuffix(last[strings.LastIndexAny(last, "@>")+1:], initialSuffix)
		out[key] = rv
	}
	return out
}

func (h *diffHandler) sequences() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]string{}
	for key, events := range h.byKey {
		out[key] = strings.Join(events, ", ")
	}
	return out
}

// storeView renders a store as key → RV.
func storeView(s toolscache.Store) map[string]string {
	out := map[string]string{}
	for _, o := range s.List() {
		out[keyOfObj(o)] = rvOf(o)
	}
	return out
}

func serverView(f *informertest.Fake) map[string]string {
	out := map[string]string{}
	for _, o := range f.Objects() {
		out[keyOfObj(o)] = rvOf(o)
	}
	return out
}

// diffPair is the two informers under test, each with one handler.
type diffPair struct {
	f                *informertest.Fake
	ours, reference  toolscache.SharedIndexInformer
	oursH, referencH *diffHandler
}

func startDiffPair(t *testing.T, f *informertest.Fake,
	oursHandler, referenceHandler toolscache.ResourceEventHandler) *diffPair {
	t.Helper()
	p := &diffPair{
		f:         f,
		ours:      newPodInformer(f, Options{Name: oursName}),
		reference: toolscache.NewSharedIndexInformer(f, &corev1.Pod{}, 0, toolscache.Indexers{}),
		oursH:     newDiffHandler(),
		referencH: newDiffHandler(),
	}
	for _, h := range []struct {
		inf  toolscache.SharedIndexInformer
		main *diffHandler
		more toolscache.ResourceEventHandler
	}{{p.ours, p.oursH, oursHandler}, {p.reference, p.referencH, referenceHandler}} {
		reg, err := h.inf.AddEventHandler(h.main)
		must(t, err)
		var moreReg toolscache.ResourceEventHandlerRegistration
		if h.more != nil {
			moreReg, err = h.inf.AddEventHandler(h.more)
			must(t, err)
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { defer close(done); h.inf.Run(stop) }()
		t.Cleanup(func() {
			close(stop)
			<-done
		})
		waitSynced(t, reg.HasSyncedChecker())
		if moreReg != nil {
			// Until it has its initial adds, a later update could coalesce
			// into them in our queue.
			waitSynced(t, moreReg.HasSyncedChecker())
		}
	}
	return p
}

// quiesce waits until both stores and both handlers' views equal the server.
func (p *diffPair) quiesce(t *testing.T, step string) {
	t.Helper()
	want := fmt.Sprint(serverView(p.f))
	eventually(t, 20*time.Second, step+": both informers at the server's state", func() bool {
		return fmt.Sprint(storeView(p.ours.GetStore())) == want && fmt.Sprint(storeView(p.reference.GetStore())) == want &&
			fmt.Sprint(p.oursH.view()) == want && fmt.Sprint(p.referencH.view()) == want
	})
}

func TestDifferentialScenarioMatchesClientGo(t *testing.T) {
	for _, mode := range []string{"paginated LIST", modeWatchList} {
		t.Run(mode, func(t *testing.T) {
			f := informertest.New(&corev1.Pod{})
			f.ServeWatchList(mode == modeWatchList)
			for i := range 5 {
				f.Create(pod("a", fmt.Sprintf("p%d", i), "", appWeb))
			}
			p := startDiffPair(t, f, nil, nil)
			p.quiesce(t, "initial list")

			steps := []struct {
				name string
				do   func()
			}{
				{"create", func() { f.Create(pod("a", "p5", "")) }},
				{"update", func() { f.Update(pod("a", "p1", "", "app=db")) }},
				{"update again", func() { f.Update(pod("a", "p1", "", appWeb)) }},
				{verbDelete, func() { f.Delete(pod("a", "p2", "")) }},
				{"re-create", func() { f.Create(pod("a", "p2", "")) }},
				{"disconnect, then update", func() { f.CloseWatches(); f.Update(pod("a", "p3", "")) }},
				{"bookmark", f.SendBookmark},
				{"410, then delete and create", func() { f.Compact(); f.Delete(pod("a", "p4", "")); f.Create(pod("a", "p6", "")) }},
				{"after the relist", func() { f.Update(pod("a", "p0", "")) }},
			}
			for _, s := range steps {
				s.do()
				p.quiesce(t, s.name)
			}
			ours, ref := p.oursH.sequences(), p.referencH.sequences()
			// Deliberate difference: client-go's relist updates of unchanged
			// objects (see above); the objects unchanged across the 410 relist.
			var unchanged []string
			for k, seq := range ref {
				var kept []string
				for e := range strings.SplitSeq(seq, ", ") {
					if from, to, ok := strings.Cut(strings.TrimPrefix(e, "update@"), "->"); ok && from == to {
						unchanged = append(unchanged, k)
						continue
					}
					kept = append(kept, e)
				}
				ref[k] = strings.Join(kept, ", ")
			}
			sortStrings(unchanged)
			unchanged = slices.DeleteFunc(unchanged, func(k string) bool { return k == "a/p4" }) // deleted around the relist
			equalStrings(t, "client-go's relist updates of unchanged objects", unchanged,
				[]string{"a/p0", "a/p1", "a/p2", "a/p3", "a/p5"})
			if !maps.Equal(ours, ref) {
				for _, k := range sortedKeysOf(ours, ref) {
					if ours[k] != ref[k] {
						t.Errorf("%s:\n ours:      %s\n client-go: %s", k, ours[k], ref[k])
					}
				}
			}
			// Spot-check the shared sequence so the comparison cannot pass vacuously.
			equalStrings(t, "a/p2 sequence", []string{ours["a/p2"]}, []string{"add@4 initial, delete, add@11"})
			equalStrings(t, "a/p1 sequence", []string{ours["a/p1"]}, []string{"add@3 initial, update@3->8, update@8->9"})
		})
	}
}

func sortedKeysOf(ms ...map[string]string) []string {
	set := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			set[k] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}

func TestDifferentialBurstIsCoalescedOnlyByUs(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.Create(pod("a", "p0", ""))
	// A second handler on each informer blocks on its first update, so the
	// burst waits in its queue.
	gateOurs, gateRef := make(chan struct{}), make(chan struct{})
	blockedOurs, blockedRef := newDiffHandler(), newDiffHandler()
	blockedOurs.onCall = func(e string) {
		if strings.HasPrefix(e, "update") {
			<-gateOurs
		}
	}
	blockedRef.onCall = func(e string) {
		if strings.HasPrefix(e, "update") {
			<-gateRef
		}
	}
	p := startDiffPair(t, f, blockedOurs, blockedRef)
	// Both informers' Run wait for their handlers' calls: if the test fails
	// before opening the gates, this cleanup (run before the informers' own)
	// opens them.
	var openGates sync.Once
	open := func() { openGates.Do(func() { close(gateOurs); close(gateRef) }) }
	t.Cleanup(open)
	// The first update reaches both blocked handlers, which block in it.
	f.Update(pod("a", "p0", ""))
	for name, h := range map[string]*diffHandler{oursName: blockedOurs, clientGoName: blockedRef} {
		eventually(t, 20*time.Second, name+" blocked handler in its first update", func() bool { return h.count() == 2 })
	}
	const burst = 20
	for range burst - 1 {
		f.Update(pod("a", "p0", ""))
	}
	p.quiesce(t, "burst applied")
	open()
	final := rvOf(f.Objects()[0])
	for name, h := range map[string]*diffHandler{oursName: blockedOurs, clientGoName: blockedRef} {
		eventually(t, 20*time.Second, name+" blocked handler at the final state", func() bool {
			return h.view()["a/p0"] == final
		})
	}
	// Deliberate difference: client-go hands the blocked handler every
	// update; ours hands it the first (in flight when it blocked) and one
	// coalesced update from there to the final state.
	if n := len(blockedRef.forKey("a/p0")); n != 1+burst {
		t.Fatalf("client-go delivered %d notifications, want %d", n, 1+burst)
	}
	equalStrings(t, oursName, blockedOurs.forKey("a/p0"), []string{"add@2 initial", "update@2->3", "update@3->" + final})
	if final != "22" {
		t.Fatalf("final RV %s, want 22", final)
	}
}
