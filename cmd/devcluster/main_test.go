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

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltacache/deltacache/internal/testenv"
)

// TestRunStartsAControlPlaneWithTheCRDsAndRunsTheCommandAgainstIt runs a shell command
// under devcluster: the command sees KUBECONFIG pointing at a local API server, devcluster's
// line names the CRD of the demo's config/crd/bases and the --kubeconfig copy, the exit
// status is the command's, and the temporary kubeconfig is gone afterwards.
func TestRunStartsAControlPlaneWithTheCRDsAndRunsTheCommandAgainstIt(t *testing.T) {
	assets := testenv.AssetsDir(filepath.Join("..", ".."))
	if assets == "" {
		t.Skip("envtest binaries not found: set KUBEBUILDER_ASSETS=$(bash hack/envtest-binaries.sh)")
	}
	t.Setenv("KUBEBUILDER_ASSETS", assets)
	dir := t.TempDir()
	copyPath := filepath.Join(dir, "kubeconfig")
	seen := filepath.Join(dir, "seen")
	var stderr bytes.Buffer
	code := run([]string{
		"--crds", filepath.Join("..", "..", "config", "crd", "bases"), "--kubeconfig", copyPath, "--",
		"sh", "-c", `cp "$KUBECONFIG" "` + seen + `" && echo "$KUBECONFIG" >> "` + seen + `" && exit 7`,
	}, &stderr)
	if code != 7 {
		t.Fatalf("run = %d, want the command's exit status 7; stderr:\n%s", code, stderr.String())
	}
	got, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("the command did not run: %v; stderr:\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	kubeconfigPath := lines[len(lines)-1]
	if !strings.Contains(string(got), "server: https://127.0.0.1:") {
		t.Errorf("the command's $KUBECONFIG does not point at a local API server:\n%s", got)
	}
	if _, err := os.Stat(kubeconfigPath); !os.IsNotExist(err) {
		t.Errorf("the temporary kubeconfig %s outlived the control plane: %v", kubeconfigPath, err)
	}
	if copied, err := os.ReadFile(copyPath); err != nil || !strings.Contains(string(copied), "server: https://127.0.0.1:") {
		t.Errorf("--kubeconfig %s was not written: %v", copyPath, err)
	}
	for _, want := range []string{"apps.demo.deltacache.io", "kubeconfig " + copyPath} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("devcluster's line lacks %q:\n%s", want, stderr.String())
		}
	}
}

func TestRunWithoutCRDDirectoryOrBinariesSaysWhatIsMissing(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	var stderr bytes.Buffer
	if code := run([]string{"--crds", t.TempDir(), "--", "true"}, &stderr); code != 1 {
		t.Fatalf("run without binaries = %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "KUBEBUILDER_ASSETS") {
		t.Errorf("the error does not say how to find the binaries:\n%s", stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"--bogus"}, &stderr); code != 2 {
		t.Fatalf("run with an unknown flag = %d, want 2", code)
	}
}
