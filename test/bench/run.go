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
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Runner runs every section of a `make bench` run, each measurement in a child process
// of Exe (the bench binary).
type Runner struct {
	Options Options
	// Exe is the bench binary, re-executed with -child for each measurement.
	Exe string
	// Log receives progress lines and the children's stderr.
	Log io.Writer
}

// RunInfo describes the run for the report.
type RunInfo struct {
	// APIServerSkipped is why section A did not run ("" if it ran).
	APIServerSkipped string
	// APIServerVersion is the envtest kube-apiserver's version.
	APIServerVersion string
	// SeedDuration is how long creating the API server's pods took.
	SeedDuration time.Duration
	// PodJSONBytes and PodProtobufBytes are the size of one seeded pod as the API server
	// returns it.
	PodJSONBytes, PodProtobufBytes int
	// ShardingSkipped is why section E did not run ("" if it ran); ShardingSeedDuration
	// is how long creating its server's pods took.
	ShardingSkipped      string
	ShardingSeedDuration time.Duration
	// OperatorSkipped is why section O did not run ("" if it ran);
	// OperatorSeedDuration is how long creating its pods and Apps took.
	OperatorSkipped      string
	OperatorSeedDuration time.Duration
	// RestartSkipped is why section R did not run ("" if it ran);
	// RestartSeedDuration is how long creating its pods and ConfigMaps took.
	RestartSkipped      string
	RestartSeedDuration time.Duration
	// Duration is the wall time of the whole run.
	Duration time.Duration
}

// Run measures every section and returns the results.
func (r *Runner) Run(ctx context.Context) (Results, RunInfo, error) {
	start := time.Now()
	o := r.Options
	results := Results{}
	var info RunInfo
	if !o.RunsSection(SectionAPIServer) && !o.RunsSection(SectionKinds) {
		info.APIServerSkipped = "not among the sections asked for"
	} else if err := r.runAPIServer(ctx, results, &info); err != nil {
		if !errors.Is(err, ErrNoAssets) {
			return nil, info, err
		}
		info.APIServerSkipped = err.Error()
		r.logf("section A skipped: %v", err)
	}
	if !o.RunsSection(SectionSharding) {
		info.ShardingSkipped = "not among the sections asked for"
	} else if err := r.runSharding(ctx, results, &info); err != nil {
		if !errors.Is(err, ErrNoAssets) {
			return nil, info, err
		}
		info.ShardingSkipped = err.Error()
		r.logf("section E skipped: %v", err)
	}
	if !o.RunsSection(SectionOperator) {
		info.OperatorSkipped = "not among the sections asked for"
	} else if err := r.runOperator(ctx, results, &info); err != nil {
		if !errors.Is(err, ErrNoAssets) {
			return nil, info, err
		}
		info.OperatorSkipped = err.Error()
		r.logf("section O skipped: %v", err)
	}
	if !o.RunsSection(SectionRestart) {
		info.RestartSkipped = "not among the sections asked for"
	} else if err := r.runRestart(ctx, results, &info); err != nil {
		if !errors.Is(err, ErrNoAssets) {
			return nil, info, err
		}
		info.RestartSkipped = err.Error()
		r.logf("section R skipped: %v", err)
	}
	if err := r.runInProcess(ctx, results); err != nil {
		return nil, info, err
	}
	if err := r.runMemoryAPI(ctx, results); err != nil {
		return nil, info, err
	}
	if err := r.runLatency(ctx, results); err != nil {
		return nil, info, err
	}
	info.Duration = time.Since(start)
	return results, info, nil
}

func (r *Runner) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(r.Log, "bench: "+format+"\n", args...)
}

// rotate returns cs rotated left by n, so that no contender always runs first.
func rotate(cs []Contender, n int) []Contender {
	out := make([]Contender, 0, len(cs))
	for i := range cs {
		out = append(out, cs[(i+n)%len(cs)])
	}
	return out
}

func (r *Runner) section(id string) Section {
	for _, s := range r.Options.Sections() {
		if s.ID == id {
			return s
		}
	}
	panic("unknown section " + id)
}

func (r *Runner) spawn(ctx context.Context, results Results, section string, spec ChildSpec) error {
	began := time.Now()
	v, err := SpawnChild(ctx, r.Exe, spec, nil, r.Log)
	if err != nil {
		return err
	}
	results.Add(section, spec.Contender, v)
	r.logf("  %-10s %-24s %s (%.1fs)", section, spec.Contender, summarize(v), time.Since(began).Seconds())
	return nil
}

// summarize renders a child's first values briefly for the progress log.
func summarize(v Values) string {
	var s strings.Builder
	for _, f := range []string{FigSync, FigHeapPerPod, FigPeakRSS, FigListLabelNS, FigPipeAllocs,
		FigThroughput, FigWrites0, FigWrites10, FigStuckFew, FigStuckMany} {
		if xs := v[f]; len(xs) > 0 {
			fmt.Fprintf(&s, "%s=%.4g ", f, xs[0])
		}
	}
	return s.String()
}

// startControlPlane starts an envtest control plane with featureGates and writes its
// kubeconfig to a temporary file; stop stops the control plane (an error is logged)
// and removes the file.
func (r *Runner) startControlPlane(featureGates ...string) (cp *ControlPlane, kubeconfig string, stop func(), err error) {
	if cp, err = StartControlPlane(featureGates...); err != nil {
		return nil, "", nil, err
	}
	stopCP := func() {
		if err := cp.Stop(); err != nil {
			r.logf("stopping the control plane: %v", err)
		}
	}
	dir, err := os.MkdirTemp("", "deltacache-bench-")
	if err != nil {
		stopCP()
		return nil, "", nil, err
	}
	stop = func() {
		_ = os.RemoveAll(dir)
		stopCP()
	}
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, cp.Kubeconfig, 0o600); err != nil {
		stop()
		return nil, "", nil, err
	}
	return cp, kubeconfig, stop, nil
}

func (r *Runner) runAPIServer(ctx context.Context, results Results, info *RunInfo) error {
	o := r.Options
	r.logf("section A: starting the envtest control plane")
	cp, kubeconfig, stop, err := r.startControlPlane()
	if err != nil {
		return err
	}
	defer stop()
	if info.APIServerVersion, err = serverVersion(cp.Config); err != nil {
		return err
	}

	l := NewLayout(o.APIPods)
	r.logf("section A: creating %d pods in %d namespaces with %d workers", l.Pods, l.Namespaces, o.SeedWorkers)
	seedStart := time.Now()
	if err := SeedPods(ctx, cp.Config, l, o.SeedWorkers, func(done int) {
		r.logf("  %d pods created", done)
	}); err != nil {
		return err
	}
	info.SeedDuration = time.Since(seedStart)
	r.logf("section A: %d pods created in %s", l.Pods, info.SeedDuration.Round(time.Second))
	ns, name := l.Key(0)
	if info.PodJSONBytes, info.PodProtobufBytes, err = podWireSizes(ctx, cp.Config, ns, name); err != nil {
		return err
	}

	s := r.section(SectionAPIServer)
	for run := range o.Runs {
		if !o.RunsSection(SectionAPIServer) {
			break
		}
		r.logf("section A: run %d/%d", run+1, o.Runs)
		for _, c := range rotate(s.Contenders, run) {
			spec := ChildSpec{Workload: WorkloadAPIServer, Contender: c, Pods: o.APIPods, Reps: 1,
				OpTime: o.OpTime, Seed: o.Seed + uint64(run), Kubeconfig: kubeconfig}
			if err := r.spawn(ctx, results, SectionAPIServer, spec); err != nil {
				return err
			}
		}
	}
	if !o.RunsSection(SectionKinds) {
		return nil
	}
	return r.runKinds(ctx, results, cp.Config, kubeconfig)
}

// runKinds is section C, on section A's API server.
func (r *Runner) runKinds(ctx context.Context, results Results, cfg *rest.Config, kubeconfig string) error {
	o := r.Options
	l := NewKindsLayout(o.APIPods)
	r.logf("section C: creating %d Secrets and %d Apps", l.Secrets, l.Apps)
	began := time.Now()
	if err := SeedKinds(ctx, cfg, l, o.SeedWorkers); err != nil {
		return err
	}
	r.logf("section C: created in %s", time.Since(began).Round(time.Second))
	s := r.section(SectionKinds)
	for run := range o.Runs {
		r.logf("section C: run %d/%d", run+1, o.Runs)
		for _, kind := range Kinds {
			for _, c := range rotate(s.Contenders, run) {
				spec := ChildSpec{Workload: WorkloadKind, Contender: c, Kind: kind, Pods: o.APIPods,
					OpTime: o.OpTime, Seed: o.Seed + uint64(run), Kubeconfig: kubeconfig}
				if err := r.spawn(ctx, results, SectionKinds, spec); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (r *Runner) runInProcess(ctx context.Context, results Results) error {
	o := r.Options
	for run := range o.Runs {
		r.logf("section B: run %d/%d", run+1, o.Runs)
		specs := []struct {
			section string
			spec    ChildSpec
		}{
			{SectionSyncSmall, ChildSpec{Workload: WorkloadSync, Pods: o.SyncSmall}},
			{SectionSyncLarge, ChildSpec{Workload: WorkloadSync, Pods: o.SyncLarge}},
			{SectionSyncHuge, ChildSpec{Workload: WorkloadSync, Pods: o.SyncHuge}},
			{SectionSyncSmallObjects, ChildSpec{Workload: WorkloadSyncSmallObjects, Pods: o.SmallObjects}},
			{SectionThroughput, ChildSpec{Workload: WorkloadThroughput, Keys: o.Keys, Events: o.Events}},
			{SectionThroughputLarge, ChildSpec{Workload: WorkloadThroughput, Keys: o.KeysLarge,
				Events: max(o.Events, o.KeysLarge)}},
			{SectionThroughputHuge, ChildSpec{Workload: WorkloadThroughput, Keys: o.KeysHuge,
				Events: max(o.Events, o.KeysHuge)}},
			{SectionStore, ChildSpec{Workload: WorkloadStore, Keys: o.Keys, Readers: o.StoreReaders,
				Duration: o.StoreDuration}},
			{SectionStuck, ChildSpec{Workload: WorkloadStuck, Keys: o.Keys, Few: o.Events / 10, Many: o.Events}},
			{SectionFootprint, ChildSpec{Workload: WorkloadFootprint, Pods: o.APIPods}},
		}
		for _, w := range specs {
			if !o.RunsSection(w.section) {
				continue
			}
			for _, c := range rotate(r.section(w.section).Contenders, run) {
				spec := w.spec
				spec.Contender = c
				if err := r.spawn(ctx, results, w.section, spec); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (r *Runner) runMemoryAPI(ctx context.Context, results Results) error {
	o := r.Options
	if !o.RunsSection(SectionMemoryAPI) {
		return nil
	}
	r.logf("section B6: reads at %d pods, %d repetitions per contender", o.ListPods, o.Runs)
	for _, c := range r.section(SectionMemoryAPI).Contenders {
		spec := ChildSpec{Workload: WorkloadMemoryAPI, Contender: c, Pods: o.ListPods, Reps: o.Runs,
			OpTime: o.OpTime, Seed: o.Seed}
		if err := r.spawn(ctx, results, SectionMemoryAPI, spec); err != nil {
			return err
		}
	}
	return nil
}

func serverVersion(cfg *rest.Config) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return "", err
	}
	return v.GitVersion, nil
}

// podWireSizes returns the size of pod namespace/name as the API server sends it in
// JSON and in protobuf.
func podWireSizes(ctx context.Context, cfg *rest.Config, namespace, name string) (int, int, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, 0, err
	}
	size := func(accept string) (int, error) {
		raw, err := cs.CoreV1().RESTClient().Get().Namespace(namespace).Resource("pods").Name(name).
			SetHeader("Accept", accept).VersionedParams(&metav1.GetOptions{}, metav1.ParameterCodec).
			DoRaw(ctx)
		return len(raw), err
	}
	j, err := size(runtime.ContentTypeJSON)
	if err != nil {
		return 0, 0, err
	}
	p, err := size(runtime.ContentTypeProtobuf)
	return j, p, err
}
