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
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
	"github.com/deltacache/deltacache/internal/controller"
	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// Section O: the demo operator end to end. The bench's parent process drives pod churn
// and times reconcile latency (operator_churn.go); the manager runs in a child
// (OperatorWorkload) that measures its own CPU, memory and API traffic.

// Figures of section O.
const (
	FigOpCPU        = "op_cpu_s"
	FigOpCPUChurn   = "op_cpu_churn_s"
	FigOpSync       = "op_sync_s"
	FigOpPeakRSS    = "op_peak_rss_mib"
	FigOpSteadyRSS  = "op_steady_rss_mib"
	FigOpLatP50     = "op_latency_p50_ms"
	FigOpLatP99     = "op_latency_p99_ms"
	FigOpReconciles = "op_reconciles"
	FigOpBytes      = "op_received_mib"
	FigOpChanges    = "op_changes"
	FigOpLost       = "op_changes_unseen"
)

// SectionOperator is section O's ID.
const SectionOperator = "operator"

// The lines the parent writes on the operator child's stdin.
const (
	opChurnLine = "churn" // the churn begins: the child takes its CPU and RSS baseline
	opStopLine  = "stop"  // the churn is over: the child reports and exits
)

// OperatorWorkload runs the demo operator's manager (internal/controller's App controller
// and its field index, as cmd/main.go sets them up, without health probes, metrics
// server or leader election) on Contender's cache. It creates ReadyFile once the cache
// has synced, reads Commands (the parent's lines, opChurnLine then opStopLine), and
// returns: CPU seconds of the process in all and during the churn, the sync time, peak
// RSS (VmHWM), the median RSS sampled each second of the churn, reconciles, and the
// response bytes its HTTP client read from the API server.
type OperatorWorkload struct {
	Contender Contender
	Config    *rest.Config
	ReadyFile string
	Commands  io.Reader
}

// operatorCache returns the NewCacheFunc of c as an operator author would set it.
func operatorCache(c Contender) (crcache.NewCacheFunc, error) {
	switch c {
	case ControllerRuntime:
		return crcache.New, nil
	case DeltacacheDefaults:
		return dcache.New, nil
	case Deltacache:
		return dcache.NewWith(dcache.WithLabelIndexes(controller.AppLabel)), nil
	default:
		return nil, fmt.Errorf("section O has no contender %q", c)
	}
}

// Run runs the manager until the parent says stop, or ctx ends.
func (w OperatorWorkload) Run(ctx context.Context) (Values, error) {
	newCache, err := operatorCache(w.Contender)
	if err != nil {
		return nil, err
	}
	var received atomic.Int64
	cfg := countingConfig(w.Config, &received)
	stopSyncProfile, err := startProfile(w.Contender, "-sync")
	if err != nil {
		return nil, err
	}
	began := time.Now()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 benchScheme(),
		NewCache:               newCache,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, err
	}
	if err := controller.SetupIndexes(ctx, mgr); err != nil {
		return nil, err
	}
	r := &controller.AppReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 1)
	go func() { errs <- mgr.Start(ctx) }()
	// The controller's sources ask for their informers when the manager starts them;
	// asking here too makes WaitForCacheSync wait for the pods and Apps it caches.
	for _, obj := range []client.Object{&corev1.Pod{}, &demov1alpha1.App{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return nil, err
		}
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		cancel()
		return nil, fmt.Errorf("the manager's cache did not sync: %v", <-errs)
	}
	v := Values{}
	v.add(FigOpSync, time.Since(began).Seconds())
	stopSyncProfile()
	if err := os.WriteFile(w.ReadyFile, nil, 0o600); err != nil {
		return nil, err
	}
	if err := w.await(ctx, opChurnLine); err != nil {
		return nil, err
	}
	churnCPU := cpuSeconds()
	samples := sampleRSS(ctx)
	stopProfile, err := startProfile(w.Contender, "")
	if err != nil {
		return nil, err
	}
	if err := w.await(ctx, opStopLine); err != nil {
		return nil, err
	}
	stopProfile()
	rss := samples()
	cpu := cpuSeconds()
	peak, err := PeakRSS()
	if err != nil {
		return nil, err
	}
	reconciles, err := reconcileCount()
	if err != nil {
		return nil, err
	}
	v.add(FigOpCPU, cpu)
	v.add(FigOpCPUChurn, cpu-churnCPU)
	v.add(FigOpPeakRSS, peak/(1<<20))
	if m, ok := Median(rss); ok {
		v.add(FigOpSteadyRSS, m/(1<<20))
	}
	v.add(FigOpReconciles, reconciles)
	v.add(FigOpBytes, float64(received.Load())/(1<<20))
	cancel()
	if err := <-errs; err != nil {
		return nil, err
	}
	return v, nil
}

// commands is shared by await calls: one scanner over Commands.
var commands *bufio.Scanner

// await reads the parent's lines until want; the end of input is an error.
func (w OperatorWorkload) await(ctx context.Context, want string) error {
	if commands == nil {
		commands = bufio.NewScanner(w.Commands)
	}
	for commands.Scan() {
		if strings.TrimSpace(commands.Text()) == want {
			return nil
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("the parent's commands ended before %q (%v)", want, commands.Err())
}

// OperatorProfileEnv names a directory: when set, each operator child writes the CPU
// profiles of its start until synced and of its churn there, as <contender>-sync.pprof
// and <contender>.pprof, and at the end of each the live heap after a GC
// (<contender>[-sync]-heap.pprof) and the collector's figures so far (cycles, live
// heap and objects, bytes allocated: <contender>[-sync]-gc.txt); for development,
// not in the report.
const OperatorProfileEnv = "BENCH_OPERATOR_PROFILE"

// startProfile starts the CPU profile of OperatorProfileEnv, if set, in
// <contender><suffix>.pprof, and returns the function that stops it and writes the
// heap profile and collector figures.
func startProfile(c Contender, suffix string) (func(), error) {
	dir := os.Getenv(OperatorProfileEnv)
	if dir == "" {
		return func() {}, nil
	}
	f, err := os.Create(filepath.Join(dir, string(c)+suffix+".pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
		// The live heap at the end, and the collector's cycles so far.
		runtime.GC()
		if h, err := os.Create(filepath.Join(dir, string(c)+suffix+"-heap.pprof")); err == nil {
			_ = pprof.Lookup("heap").WriteTo(h, 0)
			_ = h.Close()
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		_ = os.WriteFile(filepath.Join(dir, string(c)+suffix+"-gc.txt"), fmt.Appendf(nil,
			"gc cycles %d, heap alloc %d MiB, heap objects %d, total alloc %d MiB, gc cpu fraction %.3f\n",
			ms.NumGC, ms.HeapAlloc>>20, ms.HeapObjects, ms.TotalAlloc>>20, ms.GCCPUFraction), 0o644)
	}, nil
}

// cpuSeconds returns the user and system CPU time of this process so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// sampleRSS samples VmRSS each second until the returned function is called, which
// returns the samples in bytes.
func sampleRSS(ctx context.Context) func() []float64 {
	stop := make(chan struct{})
	done := make(chan []float64, 1)
	go func() {
		var out []float64
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if rss, err := procStatusBytes("VmRSS:"); err == nil {
					out = append(out, rss)
				}
			case <-stop:
				done <- out
				return
			case <-ctx.Done():
				done <- out
				return
			}
		}
	}()
	return func() []float64 {
		close(stop)
		return <-done
	}
}

// reconcileCount sums controller_runtime_reconcile_total over its results.
func reconcileCount() (float64, error) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	var n float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			n += m.GetCounter().GetValue()
		}
	}
	return n, nil
}

// operatorSection describes section O for the report.
func operatorSection(o Options) Section {
	l := NewLayout(o.APIPods)
	return Section{
		ID:    SectionOperator,
		Title: fmt.Sprintf("O. The demo operator end to end: %d pods, %d Apps, pod churn", l.Pods, l.Apps),
		Description: fmt.Sprintf("The demo manager (internal/controller's App controller: an App's status counts the "+
			"pods labelled app=<its name> in its namespace; a pod event maps to its App through a field index) "+
			"in its own process on each cache, against its own envtest API server. Once it has synced and "+
			"written every App's status, the bench makes %s pod changes per second for %s (40%% creates, 30%% "+
			"deletes, 30%% flips of a pod's Ready condition; at most one change per App not yet in its "+
			"status). Reconcile latency is from the start of the change's request to the App status that "+
			"shows it, as the bench's own watch on Apps sees it. CPU is the manager process's user+system "+
			"time from its start (in all, and during the churn); peak RSS is VmHWM at the end; steady RSS the "+
			"median of VmRSS sampled each second of the churn; API bytes are the response bodies its HTTP "+
			"client read (cache and writes).", formatNumber(o.OperatorRate), o.OperatorChurn),
		Contenders: []Contender{DeltacacheDefaults, Deltacache, ControllerRuntime},
		EveryOurs:  true,
		Figures: []Figure{
			{FigOpCPU, "Manager CPU, start to end", "s", false},
			{FigOpCPUChurn, "— during the churn", "s", false},
			{FigOpSync, "Time from start to synced", "s", false},
			{FigOpPeakRSS, "Peak RSS", unitMiB, false},
			{FigOpSteadyRSS, "Steady RSS (median during the churn)", unitMiB, false},
			{FigOpLatP50, "Reconcile latency p50 (pod change → App status)", "ms", false},
			{FigOpLatP99, "Reconcile latency p99", "ms", false},
			{FigOpReconciles, "Reconciles", "", false},
			{FigOpBytes, "API bytes received", unitMiB, false},
			{FigOpChanges, "Pod changes made", "", true},
			{FigOpLost, "Changes never seen in an App status", "", false},
		},
	}
}

// countingConfig returns a copy of cfg whose transport adds the response-body bytes
// its clients read to received.
func countingConfig(cfg *rest.Config, received *atomic.Int64) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if resp != nil && resp.Body != nil {
				resp.Body = &countedBody{ReadCloser: resp.Body, total: received}
			}
			return resp, err
		})
	})
	return out
}
