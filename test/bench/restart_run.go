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
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// restartChangePercent is the share of the objects changed while no cache runs,
// before each warm start.
const restartChangePercent = 2

// runRestart is section R: its own control plane with o.RestartPods pods and
// o.RestartConfigMaps ConfigMaps; per run a controller-runtime cold start, then
// deltacache's cold start, resumed start and diffed start on one snapshot directory.
func (r *Runner) runRestart(ctx context.Context, results Results, info *RunInfo) error {
	o := r.Options
	r.logf("section R: starting the envtest control plane")
	cp, kubeconfig, stop, err := r.startControlPlane()
	if err != nil {
		return err
	}
	defer stop()
	l := NewLayout(o.RestartPods)
	began := time.Now()
	if err := SeedPods(ctx, cp.Config, l, o.SeedWorkers, nil); err != nil {
		return err
	}
	pcfg := rest.CopyConfig(cp.Config)
	pcfg.ContentType = runtime.ContentTypeProtobuf
	cs, err := kubernetes.NewForConfig(pcfg)
	if err != nil {
		return err
	}
	if err := seedConfigMaps(ctx, cs, l, o.RestartConfigMaps, o.SeedWorkers); err != nil {
		return err
	}
	info.RestartSeedDuration = time.Since(began)
	r.logf("section R: %d pods and %d ConfigMaps created in %s", l.Pods, o.RestartConfigMaps,
		info.RestartSeedDuration.Round(time.Second))
	rng := rand.New(rand.NewPCG(o.Seed, 0x72))
	for run := range o.Runs {
		r.logf("section R: run %d/%d", run+1, o.Runs)
		dir, err := os.MkdirTemp("", "deltacache-snapshots-")
		if err != nil {
			return err
		}
		spec := func(c Contender) ChildSpec {
			return ChildSpec{Workload: WorkloadRestart, Contender: c, Kubeconfig: kubeconfig, SnapshotDir: dir}
		}
		steps := []func() error{
			func() error { return r.spawn(ctx, results, SectionRestart, spec(ControllerRuntime)) },
			func() error { return r.spawn(ctx, results, SectionRestart, spec(RestartCold)) },
			func() error { return changeObjects(ctx, cs, rng) },
			func() error { return r.spawn(ctx, results, SectionRestart, spec(RestartResumed)) },
			func() error { return changeObjects(ctx, cs, rng) },
			func() error {
				if _, _, err := cp.RestartAPIServer(); err != nil {
					return err
				}
				return waitForWatchCaches(ctx, cs)
			},
			func() error { return r.spawn(ctx, results, SectionRestart, spec(RestartDiffed)) },
		}
		for _, step := range steps {
			if err := step(); err != nil {
				_ = os.RemoveAll(dir)
				return fmt.Errorf("section R: %w", err)
			}
		}
		_ = os.RemoveAll(dir)
	}
	return nil
}

// waitForWatchCaches returns once the API server's watch caches of pods and
// ConfigMaps serve Lists: a restarted kube-apiserver fills them from etcd first and
// meanwhile answers 429 to a LIST from the cache (resourceVersion "0" with a label
// selector, which it does not hand to etcd, as it does a LIST with a limit and no
// selector). The start after a 410 is
// timed against a server that is up as for the cold start (the restart is only how
// the bench makes the snapshots' resourceVersion too old), not with the server's own
// initialization in its figure.
func waitForWatchCaches(ctx context.Context, cs kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	opts := metav1.ListOptions{ResourceVersion: "0", LabelSelector: "deltacache.bench/warm-up=none"}
	for {
		_, podErr := cs.CoreV1().Pods("").List(ctx, opts)
		_, cmErr := cs.CoreV1().ConfigMaps("").List(ctx, opts)
		if podErr == nil && cmErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("watch caches not ready after the restart: pods %v, ConfigMaps %v", podErr, cmErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// configMapName returns the name of ConfigMap i.
func configMapName(i int) string { return fmt.Sprintf("config-%05d", i) }

// newConfigMap returns ConfigMap i of l's namespaces: three keys of a chart's values.
func newConfigMap(l Layout, i int) *corev1.ConfigMap {
	app := l.AppName(i % l.Apps)
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: l.NamespaceName(i % l.Namespaces), Name: configMapName(i),
			Labels: map[string]string{appLabel: app, "app.kubernetes.io/managed-by": "Helm"}},
		Data: map[string]string{
			"config.yaml": "listen: :8080\nlogLevel: info\nreplicas: 3\nfeatures:\n  cache: true\n  metrics: true\n",
			"APP_NAME":    app,
			"checksum":    configChecksum(i % l.Apps),
		},
	}
}

// seedConfigMaps creates n ConfigMaps in l's namespaces with workers clients.
func seedConfigMaps(ctx context.Context, cs kubernetes.Interface, l Layout, n, workers int) error {
	jobs := make(chan int)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Go(func() {
			for i := range jobs {
				cm := newConfigMap(l, i)
				if _, err := cs.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil &&
					!apierrors.IsAlreadyExists(err) {
					cancel(fmt.Errorf("creating ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err))
				}
			}
		})
	}
	for i := range n {
		select {
		case jobs <- i:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	return context.Cause(ctx)
}

// changeObjects changes restartChangePercent % of the pods and ConfigMaps: of those,
// half get an annotation, a fifth are deleted, a fifth are deleted and created again
// under the same name (a new uid), and a tenth of the number is created anew.
func changeObjects(ctx context.Context, cs kubernetes.Interface, rng *rand.Rand) error {
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	cms, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	stamp := fmt.Sprintf(`{"metadata":{"annotations":{"bench/changed":"%d"}}}`, time.Now().UnixNano())
	nsOf := func(key string) (string, string) {
		ns, name, _ := strings.Cut(key, "/")
		return ns, name
	}
	change := func(keys []string, patch, remove func(ns, name string) error, recreate func(ns, name string) error,
		create func(i int) error) error {
		n := len(keys) * restartChangePercent / 100
		for j, k := range rng.Perm(len(keys))[:n] {
			ns, name := nsOf(keys[k])
			var err error
			switch {
			case j%10 < 5:
				err = patch(ns, name)
			case j%10 < 7:
				err = remove(ns, name)
			case j%10 < 9:
				if err = remove(ns, name); err == nil {
					err = recreate(ns, name)
				}
			default:
				err = create(j)
			}
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsAlreadyExists(err) {
				return err
			}
		}
		return nil
	}
	podByKey := map[string]*corev1.Pod{}
	podKeys := make([]string, 0, len(pods.Items))
	for i := range pods.Items {
		p := &pods.Items[i]
		podKeys = append(podKeys, p.Namespace+"/"+p.Name)
		podByKey[p.Namespace+"/"+p.Name] = p
	}
	zero := int64(0)
	freshPod := func(p *corev1.Pod) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, Labels: p.Labels,
			Annotations: p.Annotations}, Spec: *p.Spec.DeepCopy()}
	}
	suffix := time.Now().UnixNano()
	if err := change(podKeys,
		func(ns, name string) error {
			_, err := cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(stamp), metav1.PatchOptions{})
			return err
		},
		func(ns, name string) error {
			return cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		},
		func(ns, name string) error {
			_, err := cs.CoreV1().Pods(ns).Create(ctx, freshPod(podByKey[ns+"/"+name]), metav1.CreateOptions{})
			return err
		},
		func(i int) error {
			p := freshPod(&pods.Items[i%len(pods.Items)])
			p.Name = fmt.Sprintf("%s-new-%d-%d", p.Name, suffix, i)
			_, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
			return err
		}); err != nil {
		return err
	}
	cmByKey := map[string]*corev1.ConfigMap{}
	cmKeys := make([]string, 0, len(cms.Items))
	for i := range cms.Items {
		c := &cms.Items[i]
		cmKeys = append(cmKeys, c.Namespace+"/"+c.Name)
		cmByKey[c.Namespace+"/"+c.Name] = c
	}
	freshCM := func(c *corev1.ConfigMap) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name, Labels: c.Labels},
			Data: c.Data}
	}
	return change(cmKeys,
		func(ns, name string) error {
			_, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, []byte(stamp), metav1.PatchOptions{})
			return err
		},
		func(ns, name string) error {
			return cs.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{})
		},
		func(ns, name string) error {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, freshCM(cmByKey[ns+"/"+name]), metav1.CreateOptions{})
			return err
		},
		func(i int) error {
			c := freshCM(&cms.Items[i%len(cms.Items)])
			c.Name = fmt.Sprintf("%s-new-%d-%d", c.Name, suffix, i)
			_, err := cs.CoreV1().ConfigMaps(c.Namespace).Create(ctx, c, metav1.CreateOptions{})
			return err
		})
}
