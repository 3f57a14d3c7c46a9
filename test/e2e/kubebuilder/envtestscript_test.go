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
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnvtestScriptSaysWhyItCannotDownload runs hack/envtest-binaries.sh (the plugin ships
// it as it is) with the Go module proxy turned off, an empty module cache and an empty
// envtest cache: it must fail with the go command's reason and what to do, not only exit 1.
func TestEnvtestScriptSaysWhyItCannotDownload(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(repoRoot, "hack", "envtest-binaries.sh"))
	cmd.Dir = tmp
	cmd.Env = append(goEnv(), "GOPROXY=off", "GOFLAGS=-modcacherw", "GOMODCACHE="+filepath.Join(tmp, "mod"),
		"DELTACACHE_CACHE_DIR="+filepath.Join(tmp, "envtest"), "ENVTEST_K8S_VERSION=1.37.2")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the script succeeded with the module proxy off:\n%s", out)
	}
	for _, want := range []string{
		"could not download k8s.io/kubernetes@v1.37.2 from the Go module proxy",
		"module lookup disabled by GOPROXY=off", // the go command's own error
		"go env GOPROXY: off",
		"ENVTEST_K8S_VERSION=",
		filepath.Join(tmp, "envtest", "1.37.2-"),
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the script's output lacks %q:\n%s", want, out)
		}
	}
}
