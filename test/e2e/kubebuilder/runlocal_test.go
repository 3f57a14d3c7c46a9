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
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// requireRunLocalServesReadyz runs the project's `make run-local` with no cluster configured
// (no KUBECONFIG): it must start a local control plane with the project's CRDs, run the
// manager against it until its readyz check (the informers' among them) passes, and on
// Ctrl-C (SIGINT to the process group, as a terminal sends it) stop the manager and then the
// control plane.
func requireRunLocalServesReadyz(t *testing.T, dir string) {
	t.Helper()
	probes := freeAddress(t)
	logs := &lockedBuffer{}
	cmd := exec.Command("make", "run-local", "RUN_ARGS=--health-probe-bind-address="+probes)
	cmd.Dir = dir
	cmd.Env = append(goEnv(), "XDG_CONFIG_HOME="+configHome)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	defer func() {
		// On a failure, Ctrl-C as a user would: a SIGKILL would leave the control plane and
		// the manager (process groups of their own) running.
		if !stopped {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
			select {
			case <-exited:
			case <-time.After(time.Minute):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
			}
		}
		if t.Failed() {
			t.Logf("make run-local output:\n%s", logs.String())
		}
	}()

	for _, path := range []string{"/readyz", "/readyz/informers"} {
		var status int
		var body string
		deadline := time.Now().Add(4 * time.Minute)
		for time.Now().Before(deadline) {
			if status, body = get("http://" + probes + path); status == http.StatusOK {
				break
			}
			select {
			case err := <-exited:
				stopped = true
				t.Fatalf("make run-local exited before %s passed: %v", path, err)
			case <-time.After(500 * time.Millisecond):
			}
		}
		if status != http.StatusOK {
			t.Fatalf("GET %s = %d %q, want 200 from make run-local's manager", path, status, body)
		}
	}
	t.Logf("make run-local: readyz passed after %s", time.Since(start).Round(100*time.Millisecond))

	out := logs.String()
	line := regexp.MustCompile(`devcluster: local control plane at https://(127\.0\.0\.1:\d+)/?, CRDs installed: ([^;]*);`).
		FindStringSubmatch(out)
	if line == nil || !strings.Contains(line[2], "carts.shop.example.com") {
		t.Fatalf("make run-local did not say where its control plane is, with the Cart CRD installed:\n%s", out)
	}

	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-exited:
		stopped = true
	case <-time.After(2 * time.Minute):
		t.Fatalf("make run-local did not stop within 2 minutes of SIGINT")
	}
	if conn, err := net.DialTimeout("tcp", line[1], time.Second); err == nil {
		_ = conn.Close()
		t.Errorf("the local API server at %s still listens after make run-local stopped", line[1])
	}
}
