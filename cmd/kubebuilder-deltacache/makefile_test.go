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
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestEditMakefileTakesEnvtestBinariesFromTheScriptInsteadOfSetupEnvtest(t *testing.T) {
	got, err := editMakefile(readScaffold(t, makefilePath))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\ntest: manifests generate fmt vet envtest ## Run tests.\n" +
			"\tKUBEBUILDER_ASSETS=\"$$(bash hack/envtest-binaries.sh)\" go test $$(go list ./... | " +
			"grep -v /e2e) -coverprofile cover.out\n",
		".PHONY: setup-envtest\n" + setupEnvtestRule,
		".PHONY: envtest\n" + envtestRule + "\n.PHONY: golangci-lint\n",
		"\nexport ENVTEST_K8S_VERSION\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q", want)
		}
	}
	// setup-envtest, its version and its binary's variable are gone, and nothing puts the
	// control plane into the project (bin/k8s).
	for _, gone := range []string{
		`"$(ENVTEST)" use`, "$(ENVTEST): $(LOCALBIN)", "tools/setup-envtest,", "ENVTEST ?=", "ENVTEST_VERSION",
		"bin/k8s", `envtest-binaries.sh "$(LOCALBIN)"`,
	} {
		if strings.Contains(got, gone) {
			t.Errorf("still has %q", gone)
		}
	}
	if strings.Count(got, "ENVTEST_K8S_VERSION ?=") != 1 {
		t.Errorf("want one ENVTEST_K8S_VERSION assignment, got %d", strings.Count(got, "ENVTEST_K8S_VERSION ?="))
	}
}

// kubebuilder sends every file of the project to the plugin on each command: the tools
// `make test` installs (controller-gen, kustomize) go to a per-machine directory instead of
// the project's bin/.
func TestEditMakefileInstallsToolsOutsideTheProject(t *testing.T) {
	got, err := editMakefile(readScaffold(t, makefilePath))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "LOCALBIN ?= $(shell pwd)/bin") || !strings.Contains(got, "\n"+localBin) {
		t.Errorf("LOCALBIN is not set to the per-machine tools directory:\n%s", got)
	}
	// The directory make computes for a project in a temporary directory, HOME being /home/u.
	cmd := exec.Command("make", "-s", "-f", "-", "print")
	cmd.Stdin = strings.NewReader(localBin + "print:\n\t@echo $(LOCALBIN)\n")
	cmd.Env = append(os.Environ(), "HOME=/home/u", "XDG_CACHE_HOME=")
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := strings.TrimSpace(string(out))
	wantPrefix := "/home/u/.cache/deltacache/tools/" + filepath.Base(cmd.Dir) + "-"
	if !strings.HasPrefix(dir, wantPrefix) || len(dir) <= len(wantPrefix) {
		t.Errorf("LOCALBIN = %q, want %s<hash of the project's path>", dir, wantPrefix)
	}
}

func TestEditMakefileAddsRunLocalAndRunArgs(t *testing.T) {
	got, err := editMakefile(readScaffold(t, makefilePath))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\trun: manifests generate fmt vet ## Run a controller from your host.\n\tgo run ./cmd/main.go $(RUN_ARGS)\n"[1:],
		".PHONY: run-local\n" + runLocalRule,
		"go build -o \"$$tmp/devcluster\" " + devclusterPackage + "; \\\n",
		"\"$$tmp/devcluster\" --crds config/crd/bases -- \"$$tmp/manager\" $(RUN_ARGS)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q", want)
		}
	}
}

func TestEnvtestK8sVersionIsTheFullReleaseOfK8sIOAPI(t *testing.T) {
	// The sed expression of the ENVTEST_K8S_VERSION assignment, run as make runs it.
	start := strings.Index(envtestK8sVersion, "sed -E '")
	end := strings.LastIndex(envtestK8sVersion, "')")
	script := envtestK8sVersion[start+len("sed -E '") : end]
	for in, want := range map[string]string{"v0.37.2": "1.37.2", "v0.38.0": "1.38.0", "v0.37.2-rc.1": "1.37.2"} {
		cmd := exec.Command("sed", "-E", script)
		cmd.Stdin = strings.NewReader(in + "\n")
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("k8s.io/api %s: ENVTEST_K8S_VERSION %q, want %q", in, got, want)
		}
	}
}

func TestEditMakefileRefusesAMakefileWithoutKubebuildersRulesAndNamesIt(t *testing.T) {
	scaffolded := readScaffold(t, makefilePath)
	edited, err := editMakefile(scaffolded)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ src, want string }{
		"already edited": {edited, "already uses hack/envtest-binaries.sh"},
		"no envtest rule": {
			strings.Replace(scaffolded, "\nenvtest: $(ENVTEST)", "\ntools: $(ENVTEST)", 1), `has no "envtest" rule`,
		},
		"no setup-envtest rule": {
			strings.Replace(scaffolded, "\nsetup-envtest: envtest", "\nsetup: envtest", 1), `has no "setup-envtest" rule`,
		},
		"no run rule": {
			strings.Replace(scaffolded, "\nrun: manifests", "\nstart: manifests", 1), `has no "run" rule`,
		},
		"no LOCALBIN": {
			strings.Replace(scaffolded, "LOCALBIN ?=", "TOOLS ?=", 1), "has no LOCALBIN assignment",
		},
		"no ENVTEST_K8S_VERSION": {
			strings.Replace(scaffolded, "ENVTEST_K8S_VERSION ?=", "K8S_VERSION ?=", 1), "has no ENVTEST_K8S_VERSION assignment",
		},
		"test recipe changed": {
			strings.Replace(scaffolded, `"$(ENVTEST)" use`, `"$(ENVTEST)" --use`, 1),
			"the test recipe does not set KUBEBUILDER_ASSETS",
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := editMakefile(tc.src)
			var fe *fileError
			if !errors.As(err, &fe) || fe.File != makefilePath || !strings.Contains(fe.Msg, tc.want) {
				t.Fatalf("got %v, want an error on %s containing %q", err, makefilePath, tc.want)
			}
		})
	}
}
