package informer

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// seqChecker is a handler that replays what it is told onto a model and
// records every notification that contradicts the model (invariant 2: no Add
// of a present key, no Update or Delete of an absent one).
type seqChecker struct {
	mu         sync.Mutex
	model      map[string]string // key → RV
	violations []string
	slow       bool
}

func (c *seqChecker) OnAdd(obj any, _ bool) {
	c.apply("add", keyOfObj(obj), rvOf(obj), func(present bool) bool { return !present })
}
func (c *seqChecker) OnUpdate(_, obj any) {
	c.apply("update", keyOfObj(obj), rvOf(obj), func(present bool) bool { return present })
}
func (c *seqChecker) OnDelete(obj any) {
	c.apply("delete", keyOfObj(obj), "", func(present bool) bool { return present })
}

func (c *seqChecker) apply(op, key, rv string, ok func(present bool) bool) {
	if c.slow {
		runtime.Gosched()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, present := c.model[key]
	if !ok(present) {
		c.violations = append(c.violations, fmt.Sprintf("%s %s (present=%v)", op, key, present))
	}
	if op == "delete" {
		delete(c.model, key)
	} else {
		c.model[key] = rv
	}
}

func (c *seqChecker) snapshot() (map[string]string, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]string, len(c.model))
	for k, v := range c.model {
		m[k] = v
	}
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

// TestInformerConvergesToServerStateUnderChurn drives a Fake apiserver with
// random creates, updates, deletes, watch closes, compactions (410 → relist
// with tombstones), bookmarks and expiring continue tokens, and checks the
// invariants of DESIGN.md: after quiescence the store equals the server
// (no loss, no ghosts); each handler's sequence per key is consistent and
// ends at the store's state; the store RV never goes back.
// Reproduce with INFORMER_TEST_SEED=<seed>.
func TestInformerConvergesToServerStateUnderChurn(t *testing.T) {
	seed := testSeed(t)
	t.Logf("seed %d (INFORMER_TEST_SEED=%d to reproduce)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	f := informertest.New(&corev1.Pod{})
	for i := range 20 {
		f.Create(pod("a", fmt.Sprintf("p%d", i), ""))
	}
	s := newPodInformer(f, Options{PageSize: 7})
	fast := &seqChecker{model: map[string]string{}}
	slow := &seqChecker{model: map[string]string{}, slow: true}
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
				f.Update(pod("a", name, "", fmt.Sprintf("gen=%d", i)))
			} else {
				f.Create(pod("a", name, ""))
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
			c := &seqChecker{model: map[string]string{}}
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
