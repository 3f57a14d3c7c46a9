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
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControlPlane is a kube-apiserver and etcd started by envtest from the binaries in
// KUBEBUILDER_ASSETS, with request limits raised for seeding.
type ControlPlane struct {
	env *envtest.Environment
	// Config is an admin rest.Config for the API server.
	Config *rest.Config
	// Kubeconfig is the same credentials as a kubeconfig file's content, for children.
	Kubeconfig []byte
	certDir    string
}

// ErrNoAssets is returned by StartControlPlane when KUBEBUILDER_ASSETS is unset.
var ErrNoAssets = errors.New("KUBEBUILDER_ASSETS is not set: run `make bench`, or export " +
	"KUBEBUILDER_ASSETS=$(bash hack/envtest-binaries.sh)")

// StartControlPlane starts envtest's control plane from KUBEBUILDER_ASSETS with
// --max-requests-inflight=1000 and --max-mutating-requests-inflight=1000 (the seeder
// creates pods from many workers), and each of featureGates (e.g.
// "ShardedListAndWatch=true") appended to kube-apiserver's --feature-gates. Stop it
// with Stop.
func StartControlPlane(featureGates ...string) (*ControlPlane, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return nil, ErrNoAssets
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlaneStopTimeout: 15 * time.Second}
	// A certificate directory of our own outlives a restart of the kube-apiserver
	// (envtest's own is removed at its Stop): the same serving certificate and client CA,
	// so that clients reconnect after RestartAPIServer.
	certDir, err := os.MkdirTemp("", "deltacache-bench-certs-")
	if err != nil {
		return nil, err
	}
	env.ControlPlane.GetAPIServer().CertDir = certDir
	args := env.ControlPlane.GetAPIServer().Configure().
		Set("max-requests-inflight", "1000").
		Set("max-mutating-requests-inflight", "1000")
	for _, g := range featureGates {
		args.Append("feature-gates", g)
	}
	if _, err := env.Start(); err != nil {
		_ = os.RemoveAll(certDir)
		return nil, fmt.Errorf("starting envtest control plane: %w", err)
	}
	user, err := env.AddUser(envtest.User{Name: "bench-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	cfg, err := RESTConfigFromKubeconfig(kubeconfig)
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &ControlPlane{env: env, Config: cfg, Kubeconfig: kubeconfig, certDir: certDir}, nil
}

// RestartAPIServer stops the kube-apiserver and starts it again on the same etcd, port
// and certificates (its watch cache starts empty: watches from an older
// resourceVersion get 410); it returns how long the stop and the start took.
func (cp *ControlPlane) RestartAPIServer() (stopped, started time.Duration, err error) {
	api := cp.env.ControlPlane.GetAPIServer()
	began := time.Now()
	_ = api.Stop() // a kill after the stop timeout is an error too, and an expected one
	stopped = time.Since(began)
	err = api.Start()
	return stopped, time.Since(began) - stopped, err
}

// Stop stops the API server and etcd.
func (cp *ControlPlane) Stop() error {
	defer func() { _ = os.RemoveAll(cp.certDir) }()
	return cp.env.Stop()
}

// RESTConfigFromKubeconfig returns the rest.Config of kubeconfig with client-side rate
// limiting off (QPS -1), as controller-runtime's config.GetConfig sets it.
func RESTConfigFromKubeconfig(kubeconfig []byte) (*rest.Config, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS = -1
	return cfg, nil
}

// SeedPods creates the namespaces and pods of l with workers concurrent clients (pods
// created by FieldManager, so each carries managedFields). Pods that already exist are
// left alone. progress, if not nil, is called every 5 seconds with the number created
// so far.
func SeedPods(ctx context.Context, cfg *rest.Config, l Layout, workers int, progress func(done int)) error {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for n := range l.Namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.NamespaceName(n)}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil &&
			!apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next, created atomic.Int64
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= l.Pods || ctx.Err() != nil {
					return
				}
				p := l.NewPod(i)
				_, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{FieldManager: FieldManager})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					cancel(fmt.Errorf("creating pod %s/%s: %w", p.Namespace, p.Name, err))
					return
				}
				created.Add(1)
			}
		})
	}
	if progress != nil {
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			t := time.NewTicker(5 * time.Second)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					progress(int(created.Load()))
				}
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}
