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

// Package devcluster runs the demo operator's playground for `make run` when no cluster is
// configured: a local control plane (kube-apiserver and etcd, the binaries `make envtest`
// builds), the App samples with pods labelled for them, a stand-in for the kubelet that
// moves those pods through their lifecycle, and a periodic status table of the Apps.
//
// Nothing here runs against a real cluster: cmd/main.go uses it only when it found no
// kubeconfig, or when asked to with --local-control-plane=true.
package devcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControlPlane is a running local kube-apiserver and etcd, with the project's CRDs installed.
type ControlPlane struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// KubeconfigPath is a kubeconfig file for the same administrator, for kubectl.
	KubeconfigPath string
	// CRDs are the names of the CustomResourceDefinitions installed from crdDir.
	CRDs []string

	env      *envtest.Environment
	dir      string
	stopOnce sync.Once
	stopErr  error
}

// StartControlPlane starts kube-apiserver and etcd from assetsDir (the directory holding both
// binaries; "" means $KUBEBUILDER_ASSETS), with data in a temporary directory, and installs
// the CRDs found in crdDir ("" installs none). It returns an error naming the missing piece when the binaries
// cannot be found. Call Stop to shut both down and remove the data.
func StartControlPlane(assetsDir, crdDir string) (*ControlPlane, error) {
	if assetsDir == "" {
		assetsDir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if assetsDir == "" {
		return nil, fmt.Errorf("no control plane binaries: set KUBEBUILDER_ASSETS to the directory " +
			"holding kube-apiserver and etcd (`make envtest` builds them and prints it)")
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assetsDir, bin)); err != nil {
			return nil, fmt.Errorf("control plane binary %s not usable in %s: %w", bin, assetsDir, err)
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assetsDir,
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  20 * time.Second,
	}
	if crdDir != "" {
		env.CRDDirectoryPaths = []string{crdDir}
		env.ErrorIfCRDPathMissing = true
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting local control plane: %w", err)
	}
	cp := &ControlPlane{Config: cfg, env: env}
	for _, crd := range env.CRDs {
		cp.CRDs = append(cp.CRDs, crd.Name)
	}

	dir, err := os.MkdirTemp("", "deltacache-run-")
	if err != nil {
		_ = cp.Stop()
		return nil, err
	}
	cp.dir = dir
	user, err := env.AddUser(envtest.User{Name: "deltacache-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		_ = cp.Stop()
		return nil, fmt.Errorf("creating the local admin user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		_ = cp.Stop()
		return nil, fmt.Errorf("writing the local kubeconfig: %w", err)
	}
	cp.KubeconfigPath = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(cp.KubeconfigPath, kubeconfig, 0o600); err != nil {
		_ = cp.Stop()
		return nil, err
	}
	return cp, nil
}

// Stop shuts down kube-apiserver and etcd and removes their data and the kubeconfig.
// It is safe to call more than once and from several goroutines: the first call stops
// the control plane, the others wait for it and return its error.
func (cp *ControlPlane) Stop() error {
	cp.stopOnce.Do(func() {
		cp.stopErr = cp.env.Stop()
		if cp.dir != "" {
			_ = os.RemoveAll(cp.dir)
		}
	})
	return cp.stopErr
}
