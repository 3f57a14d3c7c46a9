package informer

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// seqChecker is a handler that replays what it is told onto a model and
// records every notification that contradicts the model (invariant 2: no Add
// of a present key, no Update or Delete of an absent one, and nothing about
// an object — a UID — after its Delete: a re-created object has a new UID).
type seqChecker struct {
	mu         sync.Mutex
	model      map[string]string // key → RV
	uids       map[string]types.UID
	dead       map[types.UID]bool
	violations []string
	slow       bool
}

func newSeqChecker(slow bool) *seqChecker {
	return &seqChecker{model: map[string]string{}, uids: map[string]types.UID{}, dead: map[types.UID]bool{}, slow: slow}
}

func (c *seqChecker) OnAdd(obj any, _ bool) {
	c.apply("add", obj, func(present bool) bool { return !present })
}
func (c *seqChecker) OnUpdate(_, obj any) {
	c.apply("update", obj, func(present bool) bool { return present })
}
func (c *seqChecker) OnDelete(obj any) {
	c.apply(verbDelete, obj, func(present bool) bool { return present })
}

func (c *seqChecker) apply(op string, obj any, ok func(present bool) bool) {
	if c.slow {
		runtime.Gosched()
	}
	key := keyOfObj(obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	_, present := c.model[key]
	if !ok(present) {
		c.violations = append(c.violations, fmt.Sprintf("%s %s (present=%v)", op, key, present))
	}
	if op == verbDelete {
		c.dead[c.uids[key]] = true
		delete(c.model, key)
		delete(c.uids, key)
		return
	}
	uid := uidOf(obj)
	if c.dead[uid] {
		c.violations = append(c.violations, fmt.Sprintf("%s %s of uid %s after its delete", op, key, uid))
	}
	c.model[key] = rvOf(obj)
	c.uids[key] = uid
}

func uidOf(obj any) types.UID {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetUID()
}

func (c *seqChecker) snapshot() (map[string]string, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]string, len(c.model))
	maps.Copy(m, c.model)
	return m, append([]string(nil), c.violations...)
}

func rvOf(obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

func testSeed(t *testing.T) uint64 {
	if s := os.Getenv("INFORMER_TEST_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return uint64(time.Now().UnixNano())
}

// TestInformerConvergesToServerStateUnderChurn is the model-based test: it
// drives a Fake apiserver (the model) with random creates, updates, deletes,
// watch closes (disconnects), compactions (410 → relist with tombstones),
// bookmarks and expiring continue tokens, with the initial list and relists
// paginated or streamed (WatchList), and checks the invariants of
// docs/architecture.md (1, 2 and 3):
// after quiescence the store equals the server (no loss, no ghosts); each
// handler's last-seen state per key equals the server; no handler sees an
// Add of a present key, an Update or Delete of an absent one, or any event
// of an object (UID) after its Delete; the store RV never goes back.
// Reproduce with INFORMER_TEST_SEED=<seed>.
func TestInformerConvergesToServerStateUnderChurn(t *testing.T) {
	seed := testSeed(t)
	t.Logf("seed %d (INFORMER_TEST_SEED=%d to reproduce)", seed, seed)
	for _, mode := range []string{"paginated LIST", modeWatchList} {
		t.Run(mode, func(t *testing.T) {
			convergeUnderChurn(t, rand.New(rand.NewPCG(seed, 1)), mode == modeWatchList)
		})
	}
}

func convergeUnderChurn(t *testing.T, rng *rand.Rand, watchList bool) {
	f := informertest.New(&corev1.Pod{})
	f.ServeWatchList(watchList)
	generation := 0
	create := func(name string) {
		generation++
		p := pod("a", name, "")
		p.UID = types.UID(fmt.Sprintf("%s-%d", name, generation))
		f.Create(p)
	}
	update := func(name string, labels ...string) {
		cur, _ := f.Get("a/" + name)
		p := pod("a", name, "", labels...)
		p.UID = cur.(*corev1.Pod).UID
		f.Update(p)
	}
	for i := range 20 {
		create(fmt.Sprintf("p%d", i))
	}
	s := newPodInformer(f, Options{PageSize: 7})
	fast := newSeqChecker(false)
	slow := newSeqChecker(true)
	addHandler(t, s, fast)
	addHandler(t, s, slow)
	startInformer(t, s)

	// Invariant 3: the store RV never goes back.
	stopRV := make(chan struct{})
	rvDone := make(chan string)
	go func() {
		prev := ""
		var bad string
		for {
			select {
			case <-stopRV:
				rvDone <- bad
				return
			default:
			}
			cur := s.Indexer().LastStoreSyncResourceVersion()
			if rvOlder(cur, prev) && bad == "" {
				bad = fmt.Sprintf("store RV went back from %s to %s", prev, cur)
			}
			prev = cur
			runtime.Gosched()
		}
	}()

	exists := map[string]bool{}
	for i := range 20 {
		exists[fmt.Sprintf("p%d", i)] = true
	}
	var lateCheckers []*seqChecker
	for i := range 800 {
		name := fmt.Sprintf("p%d", rng.IntN(40))
		switch r := rng.IntN(100); {
		case r < 50:
			if exists[name] {
				update(name, fmt.Sprintf("gen=%d", i))
			} else {
				create(name)
				exists[name] = true
			}
		case r < 75:
			if exists[name] {
				f.Delete(pod("a", name, ""))
				exists[name] = false
			}
		case r < 80:
			f.CloseWatches()
		case r < 83:
			f.Compact()
		case r < 88:
			f.SendBookmark()
		case r < 90:
			f.ExpireContinueTokens(rng.IntN(2) == 0)
		case r < 91 && len(lateCheckers) < 2:
			c := newSeqChecker(false)
			lateCheckers = append(lateCheckers, c)
			addHandler(t, s, c)
		}
		if rng.IntN(50) == 0 {
			time.Sleep(time.Millisecond) // let the informer interleave
		}
	}
	f.ExpireContinueTokens(false)

	want := map[string]string{}
	for _, o := range f.Objects() {
		want[keyOfObj(o)] = rvOf(o)
	}
	stored := func() map[string]string {
		m := map[string]string{}
		for _, o := range s.GetStore().List() {
			m[keyOfObj(o)] = rvOf(o)
		}
		return m
	}
	eventually(t, 20*time.Second, "store equals server", func() bool { return fmt.Sprint(stored()) == fmt.Sprint(want) })
	checkers := map[string]*seqChecker{"fast": fast, "slow": slow}
	for i, c := range lateCheckers {
		checkers[fmt.Sprintf("late%d", i)] = c
	}
	for name, c := range checkers {
		eventually(t, 20*time.Second, name+" handler at the store's state", func() bool {
			m, _ := c.snapshot()
			return fmt.Sprint(m) == fmt.Sprint(want)
		})
		if _, v := c.snapshot(); len(v) > 0 {
			t.Errorf("%s handler saw inconsistent sequences: %q", name, v)
		}
	}
	close(stopRV)
	if bad := <-rvDone; bad != "" {
		t.Error(bad)
	}
	eventually(t, 10*time.Second, "store RV at server RV", func() bool {
		return s.Indexer().LastStoreSyncResourceVersion() == f.ResourceVersion()
	})
}
