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

package bench

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltacache/deltacache/pkg/shard"
)

// replica returns the Values a section E child reports.
func replica(bytes, heap, perPod, rss, sync, held float64) Values {
	return Values{FigShardBytes: {bytes}, FigShardHeap: {heap}, FigHeapPerPod: {perPod}, FigPeakRSS: {rss},
		FigSync: {sync}, FigShardObjects: {held}}
}

func TestAggregateReplicasMeansFiguresAndChecksThePodsAddUp(t *testing.T) {
	got, err := AggregateReplicas([]Values{
		replica(1, 2, 3000, 50, 0.2, 300),
		replica(2, 4, 2000, 60, 0.4, 330),
		replica(3, 6, 1000, 70, 0.6, 370),
	}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{FigShardBytes: 2, FigShardHeap: 4, FigHeapPerPod: 2000, FigPeakRSS: 60,
		FigShardObjects: 1000.0 / 3, FigShardObjectsMin: 300, FigShardObjectsMax: 370, FigShardObjectsSum: 1000}
	for fig, w := range want {
		if xs := got[fig]; len(xs) != 1 || xs[0] != w {
			t.Errorf("%s = %v, want [%v]", fig, xs, w)
		}
	}
	if xs := got[FigSync]; len(xs) != 1 || xs[0] < 0.4-1e-12 || xs[0] > 0.4+1e-12 {
		t.Errorf("%s = %v, want [0.4]", FigSync, xs)
	}

	// A pod held twice, or by nobody, fails the round.
	if _, err := AggregateReplicas([]Values{replica(1, 1, 1, 1, 1, 600), replica(1, 1, 1, 1, 1, 401)}, 1000); err == nil ||
		!strings.Contains(err.Error(), "1001 in all: want 1000") {
		t.Errorf("1001 pods held of 1000: error %v", err)
	}
	if _, err := AggregateReplicas([]Values{replica(1, 1, 1, 1, 1, 999)}, 1000); err == nil {
		t.Error("999 pods held of 1000: no error")
	}
	missing := replica(1, 1, 1, 1, 1, 1000)
	delete(missing, FigPeakRSS)
	if _, err := AggregateReplicas([]Values{missing}, 1000); err == nil || !strings.Contains(err.Error(), FigPeakRSS) {
		t.Errorf("a replica without peak RSS: error %v", err)
	}
	if _, err := AggregateReplicas(nil, 1000); err == nil {
		t.Error("no replica: no error")
	}
}

func TestShardedContenderNamesItsReplicas(t *testing.T) {
	c := ShardedContender(3)
	if c != "deltacache-sharded-3" {
		t.Errorf("ShardedContender(3) = %q", c)
	}
	if n, ok := ShardReplicas(c); !ok || n != 3 {
		t.Errorf("ShardReplicas(%q) = %d, %v", c, n, ok)
	}
	for _, other := range []Contender{Deltacache, ControllerRuntime, "deltacache-sharded-x", "deltacache-sharded-0"} {
		if n, ok := ShardReplicas(other); ok {
			t.Errorf("ShardReplicas(%q) = %d, true", other, n)
		}
	}
	s := shardingSection(QuickOptions())
	if s.ID != SectionSharding || len(s.Contenders) != 2+len(ShardReplicaCounts) || s.Ours() != Deltacache {
		t.Errorf("section E: %s with contenders %v", s.ID, s.Contenders)
	}
	if !strings.Contains(s.Title, "2000 pods") {
		t.Errorf("quick section E title %q does not say 2000 pods", s.Title)
	}
}

func TestRingLeasesAnnounceEveryMemberWithoutSlots(t *testing.T) {
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	ids := ShardIdentities(3)
	if strings.Join(ids, ",") != "replica-0,replica-1,replica-2" {
		t.Fatalf("identities %v", ids)
	}
	leases := RingLeases("default", "bench-run0-r3", ids, now)
	if len(leases) != 3 {
		t.Fatalf("%d Leases, want 3", len(leases))
	}
	for i, l := range leases {
		if l.Namespace != "default" || l.Name != "bench-run0-r3-"+ids[i] {
			t.Errorf("Lease %d is %s/%s", i, l.Namespace, l.Name)
		}
		if l.Labels[shard.RingLabel] != "bench-run0-r3" {
			t.Errorf("%s: ring label %q", l.Name, l.Labels[shard.RingLabel])
		}
		if slots, ok := l.Annotations[shard.SlotsAnnotation]; !ok || slots != "" {
			t.Errorf("%s: slots annotation %q (present %v), want empty", l.Name, slots, ok)
		}
		if *l.Spec.HolderIdentity != ids[i] || *l.Spec.LeaseDurationSeconds != 15 ||
			!l.Spec.RenewTime.Time.Equal(now) {
			t.Errorf("%s: holder %s, duration %d s, renewed %v", l.Name, *l.Spec.HolderIdentity,
				*l.Spec.LeaseDurationSeconds, l.Spec.RenewTime)
		}
	}
}

func TestPodBytesCounterCountsOnlyPodResponses(t *testing.T) {
	bodies := map[string]string{
		"/api/v1/pods":                     strings.Repeat("p", 1000),
		"/api/v1/namespaces/bench-01/pods": strings.Repeat("q", 24),
		"/apis/coordination.k8s.io/v1/namespaces/default/leases": strings.Repeat("l", 500),
		"/api": strings.Repeat("d", 300),
	}
	base := roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(bodies[req.URL.Path]))}, nil
	})
	c := &podBytesCounter{}
	rt := c.wrap(base)
	for path := range bodies {
		req, err := http.NewRequest(http.MethodGet, "https://server"+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	if got := c.total.Load(); got != 1024 {
		t.Errorf("counted %d bytes, want 1024 (the two pod responses)", got)
	}
}

func TestBarrierReturnsOnceEveryReplicaIsMeasured(t *testing.T) {
	dir := t.TempDir()
	r := ShardReplica{Replicas: 2, Ring: "r", Namespace: "default", Identity: "replica-0", Barrier: dir}
	if err := r.validate(); err != nil {
		t.Fatal(err)
	}
	if err := (ShardReplica{Replicas: 2}).validate(); err == nil {
		t.Error("a sharded replica without a ring validates")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	err := r.awaitBarrier(ctx)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "1 of 2 replicas measured") {
		t.Fatalf("alone at the barrier: error %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- r.awaitBarrier(context.Background()) }()
	time.Sleep(50 * time.Millisecond)
	if err := os.WriteFile(filepath.Join(dir, "replica-1"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the barrier did not open once replica-1 was measured")
	}
}

func TestShardingReportAndTarget(t *testing.T) {
	o := QuickOptions()
	r := Results{}
	r.Add(SectionSharding, Deltacache, Values{FigShardBytes: {3}, FigShardHeap: {4}, FigHeapPerPod: {2000},
		FigPeakRSS: {60}, FigSync: {0.2}, FigShardObjects: {2000}, FigShardObjectsMin: {2000},
		FigShardObjectsMax: {2000}, FigShardObjectsSum: {2000}})
	r.Add(SectionSharding, ControllerRuntime, Values{FigShardBytes: {3}, FigShardHeap: {12}, FigHeapPerPod: {6000},
		FigPeakRSS: {80}, FigSync: {0.4}, FigShardObjects: {2000}, FigShardObjectsMin: {2000},
		FigShardObjectsMax: {2000}, FigShardObjectsSum: {2000}})
	r.Add(SectionSharding, ShardedContender(3), Values{FigShardBytes: {1.5}, FigShardHeap: {2}, FigHeapPerPod: {3000},
		FigPeakRSS: {48}, FigSync: {0.3}, FigShardObjects: {666.7}, FigShardObjectsMin: {650},
		FigShardObjectsMax: {690}, FigShardObjectsSum: {2000}})
	md := Report{Options: o, Results: r}.Markdown()
	for _, want := range []string{
		"## E. Sharded replicas: 2000 pods split by uid among R replicas",
		"| deltacache, unsharded | 3 | — | — | 4 | — | — | 2000 | — | — | 60 | — | — | 0.2 | — | — | 2000–2000 | 2000 |",
		"| deltacache, R = 3 sharded replicas (per replica) | 1.5 | 0.5 | 0.5 | 2 | 0.5 | 0.167 | 3000 | 1.5 | 0.5 | " +
			"48 | 0.8 | 0.6 | 0.3 | 1.5 | 0.75 | 650–690 | 2000 |",
		"| Pod bytes received per replica with 3 sharded replicas ≤ 0.4× one unsharded replica | 0.5 | ≤ 0.4 | **missed** |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(md, "R = 2 sharded") {
		t.Error("report has a row for R = 2, which was not measured")
	}
	for _, row := range ChartRows(o, r) {
		if strings.HasPrefix(row.Label, "[E]") {
			t.Errorf("chart row %q: section E has its own table", row.Label)
		}
	}
	skipped := Report{Options: o, Results: r, Info: RunInfo{ShardingSkipped: "KUBEBUILDER_ASSETS is not set"}}.Markdown()
	if !strings.Contains(skipped, "Skipped: KUBEBUILDER_ASSETS is not set") {
		t.Error("a skipped section E does not say why")
	}
}
