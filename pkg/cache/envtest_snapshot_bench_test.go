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

package cache_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dcache "github.com/deltacache/deltacache/pkg/cache"
)

const (
	benchSnapshotConfigMaps = 10000
	benchSnapshotChanged    = benchSnapshotConfigMaps / 50 // 2% changed before each warm start
)

// BenchmarkEnvtestSnapshotRestart10kConfigMaps measures, on the envtest control plane
// and alternately in one process, the time from Start to synced of a cache of 10k
// ConfigMaps (1 KiB of data each) in one namespace: deltacache warm (WithSnapshots, 2%
// of the objects updated since the last run's snapshot), deltacache cold, and
// controller-runtime's cache cold; and the bytes deltacache's HTTP client received.
// Sub-benchmarks: see the comments of their modes. It reports warm-ns/start, cold-ns/start, cr-ns/start, warm-vs-cold-x and
// warm-vs-cr-x (time ratios, warm ÷ other: below 1 the warm start is faster), and
// warm-B/start, cold-B/start and bytes-ratio-x (warm ÷ cold).
func BenchmarkEnvtestSnapshotRestart10kConfigMaps(b *testing.B) {
	envOnce.Do(startEnv)
	if envSkip != "" {
		b.Skip(envSkip)
	}
	if envErr != nil {
		b.Fatal(envErr)
	}
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-snapshot-"}}
	if err := k8sClient.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = k8sClient.Delete(context.Background(), ns) })
	benchCreateConfigMaps(b, ns.Name)
	dir := b.TempDir()
	opts := crcache.Options{HTTPClient: httpClient, Mapper: mapper,
		DefaultNamespaces: map[string]crcache.Config{ns.Name: {}}}

	start := func(c crcache.Cache) time.Duration {
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		begin := time.Now()
		if _, err := c.GetInformer(runCtx, &corev1.ConfigMap{}, crcache.BlockUntilSynced(false)); err != nil {
			b.Fatal(err)
		}
		go func() { done <- c.Start(runCtx) }()
		if !c.WaitForCacheSync(runCtx) {
			b.Fatal("WaitForCacheSync returned false")
		}
		took := time.Since(begin)
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		return took
	}
	deltacache := func(snapshots bool) (time.Duration, int64) {
		options := []dcache.Option{dcache.WithStorage(dcache.StorageCompact)}
		if snapshots {
			options = append(options, dcache.WithSnapshots(dir))
		}
		c, err := dcache.NewWith(options...)(cfg, opts)
		if err != nil {
			b.Fatal(err)
		}
		took := start(c)
		return took, c.(*dcache.Cache).ReceivedBytes()
	}
	deltacache(true) // writes the first snapshot
	round := 0
	// "last-change-here": the ConfigMaps' updates are the server's last writes, so the
	// resumed watch reaches the server's resourceVersion with its events.
	// "other-kind-changed-since": another kind is written after them (as in any real
	// cluster), so the resumed watch waits for the API server's bookmark (about 1 s).
	// "diffed": the snapshot's resourceVersion is made unusable (ahead of the
	// server's, as envtest's watch cache never answers 410 for its own history), so
	// the warm start takes the metadata diff and Gets the 2% changed.
	for _, mode := range []string{"last-change-here", "other-kind-changed-since", "diffed"} {
		other := mode != "last-change-here"
		b.Run(mode, func(b *testing.B) {
			var warm, cold, cr time.Duration
			var warmBytes, coldBytes int64
			n := 0
			for b.Loop() {
				b.StopTimer()
				benchUpdateConfigMaps(b, ns.Name, round)
				if other {
					ns.Annotations = map[string]string{"round": fmt.Sprint(round)}
					if err := k8sClient.Update(ctx, ns); err != nil {
						b.Fatal(err)
					}
				}
				round++
				if mode == "diffed" {
					setSnapshotRV(b, snapshotFile(dir, "ConfigMap", ns.Name), "999999999999")
				}
				b.StartTimer()
				d, by := deltacache(true)
				warm, warmBytes = warm+d, warmBytes+by
				d, by = deltacache(false)
				cold, coldBytes = cold+d, coldBytes+by
				c, err := crcache.New(cfg, opts)
				if err != nil {
					b.Fatal(err)
				}
				cr += start(c)
				n++
			}
			f := float64(n)
			b.ReportMetric(float64(warm.Nanoseconds())/f, "warm-ns/start")
			b.ReportMetric(float64(cold.Nanoseconds())/f, "cold-ns/start")
			b.ReportMetric(float64(cr.Nanoseconds())/f, "cr-ns/start")
			b.ReportMetric(float64(warm)/float64(cold), "warm-vs-cold-x")
			b.ReportMetric(float64(warm)/float64(cr), "warm-vs-cr-x")
			b.ReportMetric(float64(warmBytes)/f, "warm-B/start")
			b.ReportMetric(float64(coldBytes)/f, "cold-B/start")
			b.ReportMetric(float64(warmBytes)/float64(coldBytes), "bytes-ratio-x")
		})
	}
}

// benchCreateConfigMaps creates benchSnapshotConfigMaps ConfigMaps with 1 KiB of
// data each in ns, 8 at a time.
func benchCreateConfigMaps(b *testing.B, ns string) {
	data := map[string]string{"payload": strings.Repeat("x", 1024)}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < benchSnapshotConfigMaps; i += 8 {
				cm := newConfigMap(ns, fmt.Sprintf("cm-%d", i), map[string]string{appLabel: "bench"}, data)
				if err := k8sClient.Create(context.Background(), cm); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// benchUpdateConfigMaps updates benchSnapshotChanged ConfigMaps of ns (a different
// set each round).
func benchUpdateConfigMaps(b *testing.B, ns string, round int) {
	for i := range benchSnapshotChanged {
		key := client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("cm-%d", (round*benchSnapshotChanged+i)%benchSnapshotConfigMaps)}
		var cm corev1.ConfigMap
		if err := k8sClient.Get(context.Background(), key, &cm); err != nil {
			b.Fatal(err)
		}
		cm.Labels = map[string]string{appLabel: fmt.Sprintf("round-%d", round)}
		if err := k8sClient.Update(context.Background(), &cm); err != nil {
			b.Fatal(err)
		}
	}
}
