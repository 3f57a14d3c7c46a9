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
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// restartLogEnv, set in the bench's environment, sends the log of deltacache's
// caches in section R to stderr (how each informer started, and the steps of a
// metadata diff with their durations).
const restartLogEnv = "DELTACACHE_BENCH_RESTART_LOG"

// Section R: a restart. A cache of pods and ConfigMaps starts cold, stops, and starts
// again from the snapshots it wrote at stop: once resumed by a watch within the API
// server's window, once after the server restarted (its watch cache no longer holds
// the snapshots' resourceVersions: 410, so the metadata diff).

// SectionRestart is section R's ID.
const SectionRestart = "restart"

// The contenders of section R: controller-runtime's cold start, and deltacache's
// defaults with WithSnapshots: the cold start that writes the snapshots, the start
// resumed by a watch, and the start after a 410 (diffed).
const (
	RestartCold    Contender = "deltacache-cold"
	RestartResumed Contender = "deltacache-resumed"
	RestartDiffed  Contender = "deltacache-diffed"
)

// Figures of section R.
const (
	FigRestartSync      = "restart_sync_s"
	FigRestartBytes     = "restart_received_mib"
	FigRestartPeakRSS   = "restart_peak_rss_mib"
	FigRestartSteadyRSS = "restart_steady_rss_mib"
	FigRestartLoaded    = "restart_loaded_objects"
	FigRestartFetched   = "restart_fetched_objects"
	FigRestartWarm      = "restart_warm_informers"
	FigSnapshotBytes    = "snapshot_bytes_per_object"
	FigSnapshotWrite    = "snapshot_write_s"
)

// RestartWorkload caches Pods and ConfigMaps on Contender's cache (SnapshotDir for
// deltacache's), from Start to synced, then stops the cache (deltacache writes its
// snapshots then) and returns: the time to sync, the response bytes received until
// then, VmHWM at sync, the RSS after sync and a GC, and for deltacache the objects
// loaded from snapshots and fetched by a diff, how many informers started warm, and
// the bytes per object and seconds of the snapshot writes at stop.
type RestartWorkload struct {
	Contender   Contender
	Config      *rest.Config
	SnapshotDir string
}

// Run measures one start and stop.
func (w RestartWorkload) Run(ctx context.Context) (Values, error) {
	var received atomic.Int64
	cfg := countingConfig(w.Config, &received)
	newCache := crcache.New
	if w.Contender != ControllerRuntime {
		opts := []dcache.Option{dcache.WithSnapshots(w.SnapshotDir)}
		if os.Getenv(restartLogEnv) != "" {
			opts = append(opts, dcache.WithLogger(funcr.New(func(prefix, args string) {
				fmt.Fprintln(os.Stderr, w.Contender, prefix, args)
			}, funcr.Options{})))
		}
		newCache = dcache.NewWith(opts...)
	}
	c, err := newCache(cfg, crcache.Options{Scheme: benchScheme()})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.ConfigMap{}} {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return nil, err
		}
	}
	began := time.Now()
	errs := make(chan error, 1)
	go func() { errs <- c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		cancel()
		return nil, fmt.Errorf("%s did not sync: %v", w.Contender, <-errs)
	}
	v := Values{}
	v.add(FigRestartSync, time.Since(began).Seconds())
	v.add(FigRestartBytes, float64(received.Load())/(1<<20))
	peak, err := PeakRSS()
	if err != nil {
		return nil, err
	}
	v.add(FigRestartPeakRSS, peak/(1<<20))
	runtime.GC()
	time.Sleep(time.Second) // the pop loop and handlers idle, the scavenger's turn
	rss, err := procStatusBytes("VmRSS:")
	if err != nil {
		return nil, err
	}
	v.add(FigRestartSteadyRSS, rss/(1<<20))
	var objects float64
	if w.Contender != ControllerRuntime {
		// Before the stop: a stopped informer's series are removed.
		if objects, err = addStartFigures(v); err != nil {
			return nil, err
		}
	}
	stopping := time.Now()
	cancel()
	if err := <-errs; err != nil {
		return nil, err
	}
	if w.Contender == ControllerRuntime {
		return v, nil
	}
	v.add(FigSnapshotWrite, time.Since(stopping).Seconds())
	written, err := dirBytes(w.SnapshotDir)
	if err != nil {
		return nil, err
	}
	if objects > 0 {
		v.add(FigSnapshotBytes, float64(written)/objects)
	}
	return v, nil
}

// dirBytes returns the bytes of the regular files in dir.
func dirBytes(dir string) (int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			return 0, err
		}
		if info.Mode().IsRegular() {
			n += info.Size()
		}
	}
	return n, nil
}

// addStartFigures adds to v what deltacache's metrics say of how its informers
// started, and returns the objects they hold.
func addStartFigures(v Values) (float64, error) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	var loaded, fetched, warm, objects float64
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch f.GetName() {
			case "deltacache_snapshot_loaded_objects_total":
				loaded += m.GetCounter().GetValue()
			case "deltacache_snapshot_fetched_objects_total":
				fetched += m.GetCounter().GetValue()
			case "deltacache_informer_starts_total":
				if s := labels["start"]; s == "resumed" || s == "diffed" {
					warm += m.GetCounter().GetValue()
				}
			case "deltacache_informer_stored_objects":
				if !strings.Contains(labels["kind"], "Namespace") {
					objects += m.GetGauge().GetValue()
				}
			}
		}
	}
	v.add(FigRestartLoaded, loaded)
	v.add(FigRestartFetched, fetched)
	v.add(FigRestartWarm, warm)
	return objects, nil
}

// restartSection describes section R for the report.
func restartSection(o Options) Section {
	return Section{
		ID: SectionRestart,
		Title: fmt.Sprintf("R. A restart: %d pods and %d ConfigMaps, %d%% of them changed while stopped",
			o.RestartPods, o.RestartConfigMaps, restartChangePercent),
		Description: "A cache of pods and ConfigMaps in its own process against its own envtest API server, " +
			"from Start to synced, then stopped. controller-runtime's cache starts cold; deltacache's defaults " +
			"with `WithSnapshots(dir)` start cold (writing their snapshots when they stop), then after " +
			"changes made while no cache runs start again: resumed (a watch from the snapshots' " +
			"resourceVersion), and, after a restart of the API server (its watch cache no longer holds that " +
			"resourceVersion: 410; the start waits until the restarted server's watch caches serve Lists, as " +
			"the cold start found them), diffed (a metadata-only LIST compared with the snapshot, a Get per " +
			"changed object). Peak RSS is VmHWM at sync, steady RSS VmRSS after sync and a GC; bytes are " +
			"the response bodies read until sync.",
		Contenders: []Contender{RestartResumed, RestartDiffed, RestartCold, ControllerRuntime},
		EveryOurs:  true,
		Figures: []Figure{
			{FigRestartSync, "Time from Start to synced", "s", false},
			{FigRestartBytes, "Bytes received until synced", unitMiB, false},
			{FigRestartPeakRSS, "Peak RSS until synced", unitMiB, false},
			{FigRestartSteadyRSS, "RSS after sync", unitMiB, false},
			{FigRestartWarm, "Informers started from a snapshot (of 2)", "", true},
			{FigRestartLoaded, "Objects loaded from snapshots", "", true},
			{FigRestartFetched, "Objects fetched by the diff", "", false},
			{FigSnapshotBytes, "Snapshot bytes written per object, at stop", "B", false},
			{FigSnapshotWrite, "Time to stop, the snapshots' write included", "s", false},
		},
	}
}
