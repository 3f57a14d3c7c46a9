/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

//nolint:goconst // Test fixtures read better as literals.
package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/deltacache/deltacache/pkg/informer"
)

// adaptiveConfigMap is config map i of namespace a, b or c with labels app=a<i%10>
// (ten values), id=<i> (unique) and tier=t<i%3>.
func adaptiveConfigMap(i int, app int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: string(rune('a' + i%3)), Name: fmt.Sprintf("cm%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i)),
			Labels: map[string]string{appLabel: fmt.Sprintf("a%d", app), "id": strconv.Itoa(i), tierLabel: fmt.Sprintf("t%d", i%3)},
		},
		Data: map[string]string{"v": strconv.Itoa(i)},
	}
}

// logLines collects the cache's log lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) option() Option {
	return WithLogger(funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{}))
}

// count returns the lines containing msg.
func (l *logLines) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, msg) {
			n++
		}
	}
	return n
}

// startAdaptive starts a cache on a liveAPI holding n config maps, with adaptive
// settings tuned by tune and a fake adaptive clock, and syncs its ConfigMap informer.
func startAdaptive(t *testing.T, n int, tune func(*adaptiveSettings), options ...Option) (*Cache, *liveAPI, *clocktesting.FakeClock) {
	t.Helper()
	c, api := newLiveCache(t, crcache.Options{}, options...)
	fc := clocktesting.NewFakeClock(time.Now())
	if c.adaptive != nil {
		c.adaptive.clock = fc
		c.adaptive.settings.sweepEvery = time.Hour // tests sweep by hand
		if tune != nil {
			tune(&c.adaptive.settings)
		}
	}
	f := api.fake(gvkConfigMap)
	for i := range n {
		f.Create(adaptiveConfigMap(i, i%10))
	}
	startCache(t, c)
	var list corev1.ConfigMapList
	if err := c.List(testCtx(t), &list); err != nil {
		t.Fatal(err)
	}
	return c, api, fc
}

// configMapEntry returns the typed ConfigMap entry of c.
func configMapEntry(t *testing.T, c *Cache) *entry {
	t.Helper()
	e, _, ok := c.informers.peek(entryKey{gvk: gvkConfigMap, shape: shapeTyped})
	if !ok {
		t.Fatal("no ConfigMap informer")
	}
	return e
}

// listLabels lists config maps matching selector (in namespace ns, "" for all) and
// returns their sorted keys.
func listLabels(t *testing.T, c *Cache, selector, ns string) []string {
	t.Helper()
	sel, err := labels.Parse(selector)
	if err != nil {
		t.Fatal(err)
	}
	var list corev1.ConfigMapList
	if err := c.List(testCtx(t), &list, client.MatchingLabelsSelector{Selector: sel}, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return sortedKeysOf(t, &list)
}

func waitReady(t *testing.T, c *Cache, key string) {
	t.Helper()
	e := configMapEntry(t, c)
	waitUntil(t, "the adaptive index of "+key, func() bool { return slices.Contains(c.adaptive.readyKeys(e), key) })
}

func gaugeOf(key string) float64 {
	return testutil.ToFloat64(adaptiveIndexesGauge.WithLabelValues(adaptiveLabels(entryKey{gvk: gvkConfigMap}, key)...))
}

func TestAdaptiveIndexIsBuiltAfterFrequentScansAndUsedByLaterLists(t *testing.T) {
	logs := &logLines{}
	c, _, _ := startAdaptive(t, 300, nil, logs.option())
	e := configMapEntry(t, c)
	before := gaugeOf(appLabel)
	var scanned []string
	for range 3 {
		scanned = listLabels(t, c, "app=a3", "")
	}
	if got := c.adaptive.readyKeys(e); len(got) != 0 || len(e.scopes[0].indexer.GetIndexers()) != 1 {
		t.Fatalf("3 scans built %v (indexes %v)", got, e.scopes[0].indexer.GetIndexers())
	}
	if len(scanned) != 30 {
		t.Fatalf("app=a3 matched %d config maps, want 30", len(scanned))
	}
	listLabels(t, c, "app=a3", "") // the 4th within a minute
	waitReady(t, c, appLabel)
	stats := c.ListStats(gvkConfigMap)

	if got := listLabels(t, c, "app=a3", ""); !slices.Equal(got, scanned) {
		t.Fatalf("indexed List = %v, want the scan's %v", got, scanned)
	}
	inB := listLabels(t, c, "app in (a3,a4),tier=t1", "b")
	if len(inB) != 20 || !strings.HasPrefix(inB[0], "b/") {
		t.Fatalf("indexed List in b = %v", inB)
	}
	after := c.ListStats(gvkConfigMap)
	if after.LabelIndex-stats.LabelIndex != 2 || after.AdaptiveLabelIndex-stats.AdaptiveLabelIndex != 2 ||
		after.Scan != stats.Scan || after.NamespaceIndex != stats.NamespaceIndex {
		t.Fatalf("ListStats %+v after %+v: want two more adaptive label-index Lists", after, stats)
	}
	if got := gaugeOf(appLabel) - before; got != 1 {
		t.Fatalf("deltacache_adaptive_label_indexes rose by %v, want 1", got)
	}
	if n := logs.count("adaptive label index built"); n != 1 {
		t.Fatalf("%d build log lines, want 1", n)
	}
	bytes := testutil.ToFloat64(adaptiveIndexBytes.WithLabelValues(adaptiveLabels(e.key, appLabel)...))
	if bytes < 300*(10+16) {
		t.Fatalf("estimated bytes %v, want at least 26 per object (an entry and its value in the record)", bytes)
	}
}

func TestAdaptiveIndexIsBuiltAfterOneLargeScan(t *testing.T) {
	c, _, _ := startAdaptive(t, 300, func(s *adaptiveSettings) { s.largeScan = 300 })
	listLabels(t, c, "tier=t2", "")
	waitReady(t, c, tierLabel)
	// 100 of a namespace are not a large scan.
	c2, _, _ := startAdaptive(t, 300, func(s *adaptiveSettings) { s.largeScan = 101 })
	listLabels(t, c2, "tier=t2", "a")
	time.Sleep(50 * time.Millisecond)
	if got := c2.adaptive.readyKeys(configMapEntry(t, c2)); len(got) != 0 {
		t.Fatalf("a scan of 100 objects built %v", got)
	}
}

// TestAdaptiveIndexAgreesWithTheServerUnderConcurrentWrites builds the index while the
// server creates, relabels and deletes config maps and readers list, then checks that
// indexed Lists return what the server holds. Run it with -race. Reproduce with
// DELTACACHE_TEST_SEED.
func TestAdaptiveIndexAgreesWithTheServerUnderConcurrentWrites(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DELTACACHE_TEST_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (DELTACACHE_TEST_SEED=%d to reproduce)", seed, seed)
	const n = 2000
	c, api, _ := startAdaptive(t, n, func(s *adaptiveSettings) { s.largeScan = n / 2 })
	f := api.fake(gvkConfigMap)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writes atomic.Int64
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(seed, 1))
		for {
			select {
			case <-stop:
				return
			default:
			}
			i := rng.IntN(n + 200)
			cm := adaptiveConfigMap(i, rng.IntN(10))
			_, exists := f.Get(cm.Namespace + "/" + cm.Name)
			switch {
			case !exists:
				f.Create(cm)
			case rng.IntN(4) == 0:
				f.Delete(cm)
			default:
				f.Update(cm)
			}
			writes.Add(1)
		}
	})
	wg.Go(func() { // readers during the build
		for {
			select {
			case <-stop:
				return
			default:
			}
			var list corev1.ConfigMapList
			_ = c.List(context.Background(), &list, client.MatchingLabels{appLabel: "a1"})
		}
	})
	listLabels(t, c, "app=a5", "") // a scan of n objects: builds
	waitReady(t, c, appLabel)
	for writes.Load() < 500 {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	store := configMapEntry(t, c).scopes[0].indexer
	waitUntil(t, "the informer to catch up", func() bool { return store.LastStoreSyncResourceVersion() == f.ResourceVersion() })

	stats := c.ListStats(gvkConfigMap)
	for app := range 10 {
		value := fmt.Sprintf("a%d", app)
		var want []string
		for _, obj := range f.Objects() {
			cm := obj.(*corev1.ConfigMap)
			if cm.Labels[appLabel] == value {
				want = append(want, cm.Namespace+"/"+cm.Name)
			}
		}
		slices.Sort(want)
		if got := listLabels(t, c, "app="+value, ""); !slices.Equal(got, want) {
			t.Fatalf("app=%s: indexed List has %d, the server %d:\n got %v\nwant %v", value, len(got), len(want), got, want)
		}
	}
	if got := c.ListStats(gvkConfigMap).AdaptiveLabelIndex - stats.AdaptiveLabelIndex; got != 10 {
		t.Fatalf("%d of 10 Lists used the adaptive index", got)
	}
}

func TestAdaptiveIndexIsDroppedAfterTenMinutesUnused(t *testing.T) {
	logs := &logLines{}
	c, _, fc := startAdaptive(t, 300, func(s *adaptiveSettings) { s.largeScan = 300 }, logs.option())
	e := configMapEntry(t, c)
	before := gaugeOf(appLabel)
	listLabels(t, c, "app=a1", "")
	waitReady(t, c, appLabel)
	ctx := testCtx(t)

	fc.Step(9 * time.Minute)
	listLabels(t, c, "app=a1", "") // used: kept 10 more minutes
	fc.Step(9 * time.Minute)
	c.adaptive.sweep(ctx)
	if !slices.Contains(c.adaptive.readyKeys(e), appLabel) {
		t.Fatal("an index used 9 minutes ago was dropped")
	}
	fc.Step(2 * time.Minute)
	c.adaptive.sweep(ctx)
	if got := c.adaptive.readyKeys(e); len(got) != 0 {
		t.Fatalf("ready after 11 minutes unused: %v", got)
	}
	if _, ok := e.scopes[0].indexer.GetIndexers()[LabelIndexName(appLabel)]; ok {
		t.Fatal("the informer still has the index")
	}
	if got := gaugeOf(appLabel); got != before {
		t.Fatalf("gauge %v after the drop, want %v", got, before)
	}
	if logs.count("adaptive label index dropped") != 1 {
		t.Fatal("no drop log line")
	}
	stats := c.ListStats(gvkConfigMap)
	if got := listLabels(t, c, "app=a1", ""); len(got) != 30 {
		t.Fatalf("List after the drop: %d items", len(got))
	}
	if got := c.ListStats(gvkConfigMap); got.Scan != stats.Scan+1 {
		t.Fatalf("List after the drop was not a scan: %+v", got)
	}
}

func TestAdaptiveIndexIsNotBuiltForAUniquePerObjectKey(t *testing.T) {
	c, _, _ := startAdaptive(t, 600, func(s *adaptiveSettings) { s.largeScan = 600 })
	e := configMapEntry(t, c)
	listLabels(t, c, "id=17", "")
	waitUntil(t, "the build to be abandoned", func() bool {
		c.adaptive.mu.Lock()
		defer c.adaptive.mu.Unlock()
		_, rejected := c.adaptive.kinds[e].rejected["id"]
		return rejected
	})
	if _, ok := e.scopes[0].indexer.GetIndexers()[LabelIndexName("id")]; ok {
		t.Fatal("the informer has an index of the unique key")
	}
	listLabels(t, c, "id=17", "")
	c.adaptive.mu.Lock()
	_, building := c.adaptive.kinds[e].indexes["id"]
	c.adaptive.mu.Unlock()
	if building {
		t.Fatal("a rejected key was queued again")
	}
}

func TestAdaptiveIndexesAreBoundedPerKind(t *testing.T) {
	c, api, _ := startAdaptive(t, 0, func(s *adaptiveSettings) { s.largeScan = 30 })
	f := api.fake(gvkConfigMap)
	for i := range 30 {
		f.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: fmt.Sprintf("m%d", i),
			Labels: map[string]string{"k1": "x", "k2": "x", "k3": "x", "k4": "x"}}})
	}
	store := configMapEntry(t, c).scopes[0].indexer
	waitUntil(t, "the config maps", func() bool { return store.Len() == 30 })
	for _, key := range []string{"k1", "k2", "k3"} {
		listLabels(t, c, key+"=x", "")
		waitReady(t, c, key)
	}
	listLabels(t, c, "k4=x", "")
	time.Sleep(50 * time.Millisecond)
	if got := c.adaptive.readyKeys(configMapEntry(t, c)); len(got) != 3 || slices.Contains(got, "k4") {
		t.Fatalf("ready %v, want k1..k3 only", got)
	}
}

func TestWithoutAdaptiveIndexesListsScan(t *testing.T) {
	c, _, _ := startAdaptive(t, 300, nil, WithoutAdaptiveIndexes())
	if c.adaptive != nil {
		t.Fatal("adaptive indexes are on")
	}
	for range 10 {
		listLabels(t, c, "app=a3", "")
	}
	if got := c.ListStats(gvkConfigMap); got.Scan != 11 || got.LabelIndex != 0 {
		t.Fatalf("ListStats %+v, want 11 scans", got)
	}
	if got := len(configMapEntry(t, c).scopes[0].indexer.GetIndexers()); got != 1 {
		t.Fatalf("%d indexes, want the namespace index only", got)
	}
}

func TestWithLabelIndexesIsAnsweredUpFrontAndNeverAdaptively(t *testing.T) {
	c, _, _ := startAdaptive(t, 300, func(s *adaptiveSettings) { s.largeScan = 1 }, WithLabelIndexes(appLabel))
	for range 5 {
		if got := listLabels(t, c, "app=a3", ""); len(got) != 30 {
			t.Fatalf("%d items", len(got))
		}
	}
	got := c.ListStats(gvkConfigMap)
	if got.LabelIndex != 5 || got.AdaptiveLabelIndex != 0 {
		t.Fatalf("ListStats %+v, want 5 configured label-index Lists", got)
	}
	if keys := c.adaptive.readyKeys(configMapEntry(t, c)); len(keys) != 0 {
		t.Fatalf("adaptive indexes %v", keys)
	}
}

// TestCandidatesByLabelsFallsBackWhenAnAdaptiveIndexIsGone: a List planned with an
// adaptive index that was dropped before it read reads the namespace or every object
// (the selector then filters them).
func TestCandidatesByLabelsFallsBackWhenAnAdaptiveIndexIsGone(t *testing.T) {
	c, _, _ := startAdaptive(t, 30, nil)
	store := configMapEntry(t, c).scopes[0].indexer
	lookups := []labelLookup{{key: appLabel, values: []string{"a1"}, auto: true}}
	all, err := candidatesByLabels(store, lookups, false, "", informer.Selection{})
	if err != nil || len(all) != 30 {
		t.Fatalf("all namespaces: %d candidates, %v", len(all), err)
	}
	inA, err := candidatesByLabels(store, lookups, false, "a", informer.Selection{})
	if err != nil || len(inA) != 10 {
		t.Fatalf("namespace a: %d candidates, %v", len(inA), err)
	}
	// A lookup that answered the whole selector: the fallback still checks it.
	selected, err := candidatesByLabels(store, lookups, true, "", informer.Selection{Labels: labels.SelectorFromSet(labels.Set{appLabel: "a1"})})
	if err != nil || len(selected) != 3 {
		t.Fatalf("answered lookup, index gone: %d candidates, %v; want the 3 with app=a1", len(selected), err)
	}
	lookups[0].auto = false
	if _, err := candidatesByLabels(store, lookups, false, "", informer.Selection{}); err == nil {
		t.Fatal("a missing configured index is not an error")
	}
}
