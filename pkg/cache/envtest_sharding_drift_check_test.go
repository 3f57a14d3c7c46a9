package cache_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dcache "github.com/deltacache/deltacache/pkg/cache"
	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/shard"
)

// checkListRecorder records the shardSelector of the consistency check's LISTs of
// ConfigMaps: the paginated, non-watch requests once the informer watches.
type checkListRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	on   bool
	sels []string
}

func (c *checkListRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	q := r.URL.Query()
	if strings.HasSuffix(r.URL.Path, "/configmaps") && q.Get("limit") != "" && q.Get("watch") == "" {
		c.mu.Lock()
		if c.on {
			c.sels = append(c.sels, q.Get("shardSelector"))
		}
		c.mu.Unlock()
	}
	return c.base.RoundTrip(r)
}

// count returns how many LISTs were recorded since the last take.
func (c *checkListRecorder) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sels)
}

// record starts recording and returns what was recorded so far, then clears it.
func (c *checkListRecorder) take(on bool) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.sels
	c.sels, c.on = nil, on
	return out
}

var configMapSeries = map[string]string{"group": "", "version": "v1", "kind": "ConfigMap", "shape": informer.ShapeTyped}

// The consistency check of a sharded cache compares the replica's shard only, and
// asks the server for that shard only: uid- and namespace-sharded ConfigMaps, with the
// ShardedListAndWatch gate (the server filters the check's LIST) and without it (the
// check filters what it receives). One replica on a ring with a phantom member serves
// part of the slots, so about half the test's objects are on the server and in
// nobody's cache. Over several check intervals: checks run and pass (each compares
// exactly the objects the replica holds), no object is counted as drift, nothing
// relists, and every LIST of the check carried the replica's shard selector.
func TestEnvtestConsistencyCheckOfAShardedCacheComparesItsShardOnly(t *testing.T) {
	for _, by := range []string{"uid", "namespace"} {
		for _, gated := range []bool{true, false} {
			t.Run(fmt.Sprintf("by=%s/gate=%v", by, gated), func(t *testing.T) {
				requireEnv(t)
				c := rest.CopyConfig(cfg)
				if gated {
					c = requireGatedEnv(t)
				}
				testShardedConsistencyCheck(t, c, by, gated)
			})
		}
	}
}

func testShardedConsistencyCheck(t *testing.T, c *rest.Config, by string, gated bool) {
	const interval = time.Second
	cs := kubernetes.NewForConfigOrDie(c)
	run := rand.String(6)
	ringNS := "ring-" + run
	createLabelled(t, cs, run, []string{ringNS})
	const id = "replica-a"
	serves := phantomMember(t, cs, ringNS, "cms", id)
	s := dcache.Sharding{Ring: shard.Options{Namespace: ringNS, Name: "cms", Identity: id}}

	// The objects: 80 ConfigMaps, of which the replica's share is counted as created.
	want := 0
	switch by {
	case "uid":
		s.ByUID = []client.Object{&corev1.ConfigMap{}}
		ns := "uid-" + run
		var names []string
		for i := range 80 {
			names = append(names, fmt.Sprintf("cm-%02d", i))
		}
		createLabelled(t, cs, run, []string{ns}, names...)
		list, err := cs.CoreV1().ConfigMaps(ns).List(envCtx(t), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cm := range list.Items {
			if serves.Has(shard.SlotOfUID(string(cm.UID))) {
				want++
			}
		}
	case "namespace":
		s.ByNamespace = []client.Object{&corev1.ConfigMap{}}
		served := namespacesOfSlots("dc-"+run, serves, true, 4)
		others := namespacesOfSlots("dc-"+run, serves, false, 4)
		names := make([]string, 10)
		for i := range names {
			names[i] = fmt.Sprintf("cm-%d", i)
		}
		createLabelled(t, cs, run, append(served, others...), names...)
		want = len(served) * len(names)
	}
	if want == 0 || want == 80 {
		t.Fatalf("the replica's share holds %d of the 80 ConfigMaps: the test needs objects on both sides", want)
	}

	rec := &checkListRecorder{}
	hcfg := rest.CopyConfig(c)
	hcfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.base = rt; return rec })
	hc, err := rest.HTTPClientFor(hcfg)
	if err != nil {
		t.Fatal(err)
	}
	r := startOnRing(t, c, hc, s, &corev1.ConfigMap{}, run, serves, dcache.WithConsistencyCheck(interval))
	ctx := envCtx(t)
	held := func() int {
		var list corev1.ConfigMapList
		if err := r.cache.List(ctx, &list); err != nil {
			return -1
		}
		return len(list.Items)
	}
	eventually(t, 20*time.Second, func() error {
		if got := held(); got != want {
			return fmt.Errorf("the replica holds %d ConfigMaps, want its share: %d", got, want)
		}
		return nil
	})
	inf, err := r.cache.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	sii := inf.(*informer.SharedIndexInformer)
	wantSharding := informer.ServerShardingIgnored
	if gated {
		wantSharding = informer.ServerShardingHonoured
	}
	if got := sii.ServerSharding(); got != wantSharding {
		t.Errorf("server sharding %v, want %v", got, wantSharding)
	}

	// Let a check that may have started before the shard settled end, then watch
	// until three more checks have passed (a check takes its interval, up to 10 %
	// more, and its own time, which a loaded machine stretches: counted, not timed).
	time.Sleep(interval)
	rec.take(true)
	before := crSeries(t, configMapSeries)
	var after map[string]float64
	delta := func(series string) float64 { return after[series] - before[series] }
	deadline := time.Now().Add(30 * interval)
	for {
		time.Sleep(interval / 2)
		after = crSeries(t, configMapSeries)
		if delta("deltacache_consistency_checks_total{result=ok}") >= 3 && rec.count() >= 3 || time.Now().After(deadline) {
			break
		}
	}
	sels := rec.take(false)

	if n := delta("deltacache_consistency_checks_total{result=ok}"); n < 3 {
		t.Errorf("%v clean checks in 30 intervals, want at least 3", n)
	}
	for _, series := range []string{
		"deltacache_consistency_checks_total{result=drift}", "deltacache_consistency_checks_total{result=error}",
		"deltacache_consistency_drift_objects_total{drift=missing}", "deltacache_consistency_drift_objects_total{drift=extra}",
		"deltacache_consistency_drift_objects_total{drift=stale}",
		"deltacache_informer_relists_total{cause=drift}", "deltacache_informer_relists_total{cause=error}",
		"deltacache_informer_relists_total{cause=expired}",
	} {
		if n := delta(series); n != 0 {
			t.Errorf("%s grew by %v while 3 checks ran, want 0", series, n)
		}
	}
	report, ok := sii.LastDriftReport()
	if !ok || report.Drifted() || report.Objects != want {
		t.Errorf("last check: %d objects, %d missing, %d extra, %d stale, want one that compared the %d objects "+
			"of the shard and found no drift", report.Objects, len(report.Missing), len(report.Extra), len(report.Stale), want)
	}
	wantSel := sii.ShardSelector().String()
	if len(sels) < 3 {
		t.Errorf("%d LISTs of the check recorded in 30 intervals, want at least 3", len(sels))
	}
	for _, sel := range sels {
		if sel != wantSel {
			t.Errorf("a LIST of the check carried shardSelector %.90q, want the replica's %.90q (%d characters)",
				sel, wantSel, len(wantSel))
			break
		}
	}
	t.Logf("by %s, gate %v: %d of 80 ConfigMaps held; %v clean checks, %d check LISTs",
		by, gated, want, delta("deltacache_consistency_checks_total{result=ok}"), len(sels))
}
