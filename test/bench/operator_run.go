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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
)

// operatorSettle bounds the wait for the operator to reconcile every App after its
// start, and operatorGrace the wait for the last changes of the churn to show.
const (
	operatorSettle = 5 * time.Minute
	operatorGrace  = 30 * time.Second
)

// runOperator is section O: its own control plane with o.APIPods pods and one App per
// app label value, the demo manager on each contender's cache in turn under pod churn.
func (r *Runner) runOperator(ctx context.Context, results Results, info *RunInfo) error {
	o := r.Options
	r.logf("section O: starting the envtest control plane")
	cp, kubeconfig, stop, err := r.startControlPlane()
	if err != nil {
		return err
	}
	defer stop()
	l := NewLayout(o.APIPods)
	began := time.Now()
	if err := SeedPods(ctx, cp.Config, l, o.SeedWorkers, nil); err != nil {
		return err
	}
	if err := seedApps(ctx, cp.Config, l); err != nil {
		return err
	}
	info.OperatorSeedDuration = time.Since(began)
	r.logf("section O: %d pods and %d Apps created in %s", l.Pods, l.Apps, info.OperatorSeedDuration.Round(time.Second))

	pcfg := rest.CopyConfig(cp.Config)
	pcfg.ContentType = runtime.ContentTypeProtobuf
	cs, err := kubernetes.NewForConfig(pcfg)
	if err != nil {
		return err
	}
	c, err := client.NewWithWatch(cp.Config, client.Options{Scheme: benchScheme()})
	if err != nil {
		return err
	}
	d := newOpChurn(cs, c, l, o.Seed, (l.Pods/l.Apps+1)*l.Apps)
	for run := range o.Runs {
		r.logf("section O: run %d/%d", run+1, o.Runs)
		for _, contender := range rotate(r.section(SectionOperator).Contenders, run) {
			if err := r.operatorRound(ctx, results, d, contender, kubeconfig); err != nil {
				return err
			}
		}
	}
	return nil
}

// operatorRound runs the manager on contender's cache once: start, sync, settle, churn.
func (r *Runner) operatorRound(ctx context.Context, results Results, d *opChurn, contender Contender,
	kubeconfig string) error {
	o := r.Options
	began := time.Now()
	dir, err := os.MkdirTemp("", "deltacache-operator-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ready := filepath.Join(dir, "ready")
	child, err := startChild(ctx, r.Exe, ChildSpec{Workload: WorkloadOperator, Contender: contender,
		Kubeconfig: kubeconfig, ReadyFile: ready}, r.Log)
	if err != nil {
		return err
	}
	defer child.kill()
	if err := pollUntil(ctx, 50*time.Millisecond, func() bool {
		_, err := os.Stat(ready)
		return err == nil || child.exited()
	}); err != nil {
		return err
	}
	if child.exited() {
		_, err := child.stop()
		return fmt.Errorf("section O: %s exited before it synced: %w", contender, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := d.load(ctx); err != nil {
		return err
	}
	if err := d.watchApps(wctx); err != nil {
		return err
	}
	if err := d.settle(ctx, operatorSettle); err != nil {
		return fmt.Errorf("section O: %s: %w", contender, err)
	}
	if err := child.send(opChurnLine); err != nil {
		return err
	}
	changes, err := d.run(ctx, o.OperatorRate, o.OperatorChurn, operatorGrace)
	if err != nil {
		return err
	}
	if err := child.send(opStopLine); err != nil {
		return err
	}
	v, err := child.stop()
	if err != nil {
		return fmt.Errorf("section O: %s: %w", contender, err)
	}
	cancel()
	d.mu.Lock()
	lat := slices.Clone(d.lat)
	lost := d.lost
	d.mu.Unlock()
	slices.Sort(lat)
	if len(lat) > 0 {
		v.add(FigOpLatP50, lat[len(lat)/2])
		v.add(FigOpLatP99, lat[min(len(lat)-1, len(lat)*99/100)])
	}
	v.add(FigOpChanges, float64(changes))
	v.add(FigOpLost, float64(lost))
	results.Add(SectionOperator, contender, v)
	r.logf("  %-10s %-24s cpu=%.3g s p99=%.3g ms peak=%.4g MiB changes=%d unseen=%d (%.1fs)", SectionOperator,
		contender, firstOf(v, FigOpCPU), firstOf(v, FigOpLatP99), firstOf(v, FigOpPeakRSS), changes, lost,
		time.Since(began).Seconds())
	return nil
}

func firstOf(v Values, fig string) float64 {
	if xs := v[fig]; len(xs) > 0 {
		return xs[0]
	}
	return 0
}

// seedApps installs the App CRD and creates one App per app label value of l, in the
// namespace of its pods, selecting them by name (spec.selector empty).
func seedApps(ctx context.Context, cfg *rest.Config, l Layout) error {
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{appCRDDir},
		ErrorIfPathMissing: true}); err != nil {
		return fmt.Errorf("installing the App CRD from %s: %w", appCRDDir, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: benchScheme()})
	if err != nil {
		return err
	}
	for a := range l.Apps {
		app := &demov1alpha1.App{
			ObjectMeta: metav1.ObjectMeta{Namespace: l.AppNamespace(a), Name: l.AppName(a)},
			Spec:       demov1alpha1.AppSpec{MinReady: int32(l.PodsOfApp(a) / 2)},
		}
		if err := c.Create(ctx, app); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating App %s/%s: %w", app.Namespace, app.Name, err)
		}
	}
	return nil
}

// runningChild is a child process the parent talks to on its stdin.
type runningChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   bytes.Buffer
	done  chan struct{}
	err   error
}

// startChild starts spec in a new process of exe, its stdin a pipe from this process.
func startChild(ctx context.Context, exe string, spec ChildSpec, stderr io.Writer) (*runningChild, error) {
	arg, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	c := &runningChild{cmd: exec.CommandContext(ctx, exe, "-"+ChildFlag, string(arg)), done: make(chan struct{})}
	c.cmd.Stdout = &c.out
	c.cmd.Stderr = stderr
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

func (c *runningChild) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *runningChild) send(line string) error {
	_, err := io.WriteString(c.stdin, line+"\n")
	return err
}

// stop closes the child's stdin, waits for it and returns its Values.
func (c *runningChild) stop() (Values, error) {
	_ = c.stdin.Close()
	<-c.done
	if c.err != nil {
		return nil, c.err
	}
	var v Values
	if err := json.Unmarshal(c.out.Bytes(), &v); err != nil {
		return nil, fmt.Errorf("decoding the child's output %q: %w", c.out.String(), err)
	}
	return v, nil
}

// kill ends the child if it still runs.
func (c *runningChild) kill() {
	if !c.exited() {
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}
