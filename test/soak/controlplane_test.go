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

package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
	"github.com/deltacache/deltacache/internal/faultproxy"
	"github.com/deltacache/deltacache/internal/testenv"
)

// controlPlane is the envtest control plane with the proxy in front of it. The
// writers talk to the kube-apiserver directly, as an admin; the cache under test
// talks through the proxy as cacheUser, whose permissions rbac.go grants per kind.
type controlPlane struct {
	env     *envtest.Environment
	scheme  *k8sruntime.Scheme
	cfg     *rest.Config // direct, admin
	proxied *rest.Config // through the proxy, as cacheUser
	direct  client.Client
	proxy   *faultproxy.TCPProxy
	crdDir  string
}

func startControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	assets := testenv.AssetsDir(filepath.Join("..", ".."))
	if assets == "" {
		t.Skip("envtest binaries not found: set KUBEBUILDER_ASSETS=$(bash hack/envtest-binaries.sh)")
	}
	cp := &controlPlane{scheme: clientgoscheme.Scheme, crdDir: filepath.Join("..", "..", "config", "crd", "bases")}
	if err := demov1alpha1.AddToScheme(cp.scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(cp.scheme); err != nil {
		t.Fatal(err)
	}
	// A generous start timeout: the kube-apiserver restarts during the run, on a busy
	// machine. Its graceful shutdown waits 60 s for the open watches, which never end by
	// themselves: envtest kills it (SIGKILL) restartStopTimeout after its SIGTERM.
	cp.env = &envtest.Environment{BinaryAssetsDirectory: assets, CRDDirectoryPaths: []string{cp.crdDir},
		ControlPlaneStartTimeout: 2 * time.Minute, ControlPlaneStopTimeout: restartStopTimeout}
	api := cp.env.ControlPlane.GetAPIServer()
	// A certificate directory of our own outlives a restart of the kube-apiserver
	// (envtest's own is removed at Stop): the same serving certificate, client CA
	// and port, so the proxy and every client reconnect as they would to a real one.
	api.CertDir = t.TempDir()
	// No periodic compaction: the faults compact etcd (compactEtcd), drawn from the seed.
	// ConfigMaps are served without the watch cache: their watches resume from etcd,
	// where a compaction makes an older resourceVersion 410 Gone (the watch cache would
	// serve a resume from its own window), and their initial lists take the LIST
	// fallback (WatchList needs the watch cache). Pods and Apps go through it.
	api.Configure().Set("etcd-compaction-interval", "0")
	api.Configure().Set("watch-cache-sizes", "configmaps#0")
	var err error
	if cp.cfg, err = cp.env.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.env.Stop() })
	if cp.direct, err = client.New(cp.cfg, client.Options{Scheme: cp.scheme}); err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(cp.cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	if cp.proxy, err = faultproxy.NewTCPProxy(target.Host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.proxy.Close() })
	user, err := cp.env.AddUser(envtest.User{Name: cacheUser, Groups: []string{"soak"}}, cp.cfg)
	if err != nil {
		t.Fatal(err)
	}
	cp.proxied = rest.CopyConfig(user.Config())
	cp.proxied.Host = "https://" + cp.proxy.Addr()
	cp.proxied.QPS, cp.proxied.Burst = 200, 400
	return cp
}

// restartStopTimeout is how long a restart waits for the kube-apiserver to stop after
// its SIGTERM before envtest kills it.
const restartStopTimeout = 15 * time.Second

// restartAPIServer stops the kube-apiserver (SIGTERM, SIGKILL restartStopTimeout
// later) and starts it again on the same etcd, port and certificates; it returns how
// long the stop and the start took.
func (cp *controlPlane) restartAPIServer() (stopped, started time.Duration, err error) {
	api := cp.env.ControlPlane.GetAPIServer()
	start := time.Now()
	_ = api.Stop() // a kill after the timeout is an error too, and an expected one
	stopped = time.Since(start)
	err = api.Start()
	return stopped, time.Since(start) - stopped, err
}

// compactEtcd compacts etcd at its current revision (through etcd's JSON gateway)
// and returns that revision: watches resumed from an older resourceVersion, once
// the kube-apiserver's watch cache no longer holds it, get 410 Gone and relist.
func (cp *controlPlane) compactEtcd(ctx context.Context) (int64, error) {
	etcd := cp.env.ControlPlane.Etcd.URL.String()
	var status struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	if err := postJSON(ctx, etcd+"/v3/maintenance/status", map[string]any{}, &status); err != nil {
		return 0, err
	}
	rev, err := strconv.ParseInt(status.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd status revision %q: %w", status.Header.Revision, err)
	}
	return rev, postJSON(ctx, etcd+"/v3/kv/compaction", map[string]any{"revision": rev}, nil)
}

func postJSON(ctx context.Context, url string, body, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Close = true // no idle connection left for the goroutine count
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s", url, resp.Status)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
