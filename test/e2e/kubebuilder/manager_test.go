//go:build e2e

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

package kubebuilder

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/deltacache/deltacache/internal/testenv"
)

// requireManagerServesInformerChecks runs the project's bin/manager against a control plane
// with the project's CRDs and checks that it runs on deltacache: its informers log their
// sync (deltacache's "informer synced" line, for the scaffolded kind), and the probe server
// answers /readyz/informers and /healthz/informers, the checks the plugin installs.
func requireManagerServesInformerChecks(t *testing.T, dir, kindKey string) {
	t.Helper()
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(dir, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: testenv.AssetsDir(dir),
	}
	if _, err := env.Start(); err != nil {
		t.Fatalf("starting a control plane for bin/manager: %v", err)
	}
	defer func() { _ = env.Stop() }()
	user, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfigPath := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}

	probes := freeAddress(t)
	logs := &lockedBuffer{}
	manager := exec.Command(filepath.Join(dir, "bin", "manager"), "--kubeconfig="+kubeconfigPath,
		"--metrics-bind-address=0", "--health-probe-bind-address="+probes)
	manager.Stdout, manager.Stderr = logs, logs
	if err := manager.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = manager.Process.Signal(syscall.SIGTERM)
		_ = manager.Wait()
		if t.Failed() {
			t.Logf("bin/manager output:\n%s", logs.String())
		}
	}()

	for _, path := range []string{"/readyz/informers", "/healthz/informers"} {
		var status int
		var body string
		deadline := time.Now().Add(90 * time.Second)
		for time.Now().Before(deadline) {
			status, body = get("http://" + probes + path)
			if status == http.StatusOK {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		if status != http.StatusOK {
			t.Fatalf("GET %s = %d %q, want 200 from the informer check", path, status, body)
		}
	}
	if out := logs.String(); !strings.Contains(out, "informer synced") || !strings.Contains(out, kindKey) {
		t.Errorf("bin/manager logged no deltacache \"informer synced\" line for %s", kindKey)
	}
}

// get returns the status and body of a GET, or 0 and the error while nothing listens.
func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// freeAddress returns a loopback address with a port nothing listens on.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return fmt.Sprint(l.Addr())
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
