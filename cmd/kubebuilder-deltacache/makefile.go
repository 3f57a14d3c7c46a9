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
	"strings"
)

const (
	makefilePath = "Makefile"
	scriptPath   = "hack/envtest-binaries.sh"

	// setupEnvtestUse is how kubebuilder's test recipe asks setup-envtest for the binaries.
	setupEnvtestUse = `$(shell "$(ENVTEST)" use $(ENVTEST_K8S_VERSION) --bin-dir "$(LOCALBIN)" -p path)`
	// scriptUse is what replaces it: the directory the script prints.
	scriptUse = `$$(bash ` + scriptPath + `)`

	// devclusterPackage is deltacache's command that runs the manager against a local
	// control plane (make run-local).
	devclusterPackage = deltacacheModule + "/cmd/devcluster"
)

// localBin replaces kubebuilder's LOCALBIN (the project's bin/): kubebuilder sends every
// file of the project to its plugins on each command, so the tools make installs there
// (controller-gen alone is tens of MB) would make every later kubebuilder command slow. The
// directory is per project (its name and a checksum of its path), so that projects pinning
// different tool versions do not share the tools' symlinks.
const localBin = `## Location to install dependencies to: a directory per project outside it, because
## kubebuilder reads every file of the project (bin/ included) on each command.
LOCALBIN ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/deltacache/tools/$(notdir $(CURDIR))-$(shell printf '%s' '$(CURDIR)' | cksum | cut -d' ' -f1)
`

// runLocalRule is the make run-local rule: the manager against a local control plane. Both
// programs are built first, into a temporary directory (not bin/, which kubebuilder would
// read): under `go run`, a Ctrl-C makes the go command exit 1 even when the program stopped
// cleanly.
const runLocalRule = `run-local: manifests generate fmt vet envtest ## Run a controller from your host against a local control plane (no cluster needed).
	@tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	go build -o "$$tmp/manager" ./cmd/main.go; \
	go build -o "$$tmp/devcluster" ` + devclusterPackage + `; \
	KUBEBUILDER_ASSETS="` + scriptUse + `" "$$tmp/devcluster" --crds config/crd/bases -- "$$tmp/manager" $(RUN_ARGS)
`

// runRecipe is kubebuilder's run recipe, which gets $(RUN_ARGS).
const runRecipe = "\tgo run ./cmd/main.go\n"

// runLocal is inserted after the run rule.
const runLocal = `
# run-local starts kube-apiserver and etcd (hack/envtest-binaries.sh), installs the CRDs of
# config/crd/bases and runs the manager with KUBECONFIG pointing at them (deltacache's
# cmd/devcluster prints where, for kubectl); Ctrl-C stops the manager, then the control plane.
# RUN_ARGS adds flags to the manager in run and run-local, e.g.
# make run-local RUN_ARGS="--health-probe-bind-address=:8082".
.PHONY: run-local
` + runLocalRule

// envtestK8sVersion replaces kubebuilder's ENVTEST_K8S_VERSION (the minor of k8s.io/api,
// "1.37", which setup-envtest resolves by downloading an index): the script builds an exact
// release, so it takes the patch too ("1.37.2" for k8s.io/api v0.37.2).
const envtestK8sVersion = `#ENVTEST_K8S_VERSION is the Kubernetes release of the kube-apiserver (and the etcd it pins)
# that hack/envtest-binaries.sh builds from the Go module proxy, derived from k8s.io/api.
ENVTEST_K8S_VERSION ?= $(shell v='$(call gomodver,k8s.io/api)'; \
  [ -n "$$v" ] || { echo "Set ENVTEST_K8S_VERSION manually (k8s.io/api replace has no tag)" >&2; exit 1; }; \
  printf '%s\n' "$$v" | sed -E 's/^v?0\.([0-9]+)\.([0-9]+).*/1.\1.\2/')
export ENVTEST_K8S_VERSION
`

const setupEnvtestRule = `setup-envtest: envtest ## Print the directory of the envtest binaries (KUBEBUILDER_ASSETS).
	@bash ` + scriptPath + `
`

const envtestRule = `envtest: ## Build kube-apiserver and etcd for envtest from Go modules (once per machine, outside the project).
	@bash ` + scriptPath + ` >/dev/null
`

// editMakefile makes the Makefile's envtest binaries come from hack/envtest-binaries.sh
// instead of setup-envtest, which downloads them: the envtest and setup-envtest rules are
// replaced, setup-envtest's binary, version and install rule removed, the test recipe takes
// KUBEBUILDER_ASSETS from the script (and depends on envtest, which prints nothing), and
// ENVTEST_K8S_VERSION is a full version. The tools go to a per-project directory outside the
// project (LOCALBIN), run passes $(RUN_ARGS) to the manager, and run-local runs it against a
// local control plane. Each anchor is a line kubebuilder's go/v4 scaffold writes; a missing
// one is an error.
func editMakefile(src string) (string, error) {
	if strings.Contains(src, scriptPath) {
		return "", fileErrorf(makefilePath, "already uses %s: deltacache is set up in this project", scriptPath)
	}
	lines := strings.SplitAfter(src, "\n")
	var err error
	for _, v := range []struct{ name, text string }{
		{"ENVTEST_K8S_VERSION", envtestK8sVersion},
		{"ENVTEST_VERSION", ""},
		{"ENVTEST", ""},
		{"LOCALBIN", localBin},
	} {
		if lines, err = replaceVariable(lines, v.name, v.text); err != nil {
			return "", err
		}
	}
	for _, r := range []struct{ target, text string }{
		{"setup-envtest", setupEnvtestRule},
		{"envtest", envtestRule},
		{"$(ENVTEST)", ""},
	} {
		if lines, err = replaceRule(lines, r.target, r.text); err != nil {
			return "", err
		}
	}
	if lines, err = editRunRule(lines); err != nil {
		return "", err
	}
	out := strings.Join(lines, "")
	if strings.Count(out, setupEnvtestUse) != 1 {
		return "", fileErrorf(makefilePath, "the test recipe does not set KUBEBUILDER_ASSETS=\"%s\" "+
			"as kubebuilder's go/v4 scaffold does", setupEnvtestUse)
	}
	out = strings.Replace(out, setupEnvtestUse, scriptUse, 1)
	const testPrereqs = "\ntest: manifests generate fmt vet setup-envtest "
	return strings.Replace(out, testPrereqs, strings.Replace(testPrereqs, "setup-envtest", "envtest", 1), 1), nil
}

// editRunRule adds $(RUN_ARGS) to the run recipe when it is kubebuilder's, and the run-local
// rule after the run rule.
func editRunRule(lines []string) ([]string, error) {
	start := -1
	for i, line := range lines {
		if strings.HasPrefix(line, "run:") {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, fileErrorf(makefilePath, "has no \"run\" rule as kubebuilder's go/v4 scaffold writes it")
	}
	end := start + 1
	for end < len(lines) && strings.HasPrefix(lines[end], "\t") {
		if lines[end] == runRecipe {
			lines[end] = strings.TrimSuffix(runRecipe, "\n") + " $(RUN_ARGS)\n"
		}
		end++
	}
	return splice(lines, end, end, runLocal), nil
}

// replaceRule replaces the rule of target (its `target:` line and the recipe lines after
// it) with rule; an empty rule removes it.
func replaceRule(lines []string, target, rule string) ([]string, error) {
	start := -1
	for i, line := range lines {
		if strings.HasPrefix(line, target+":") {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, fileErrorf(makefilePath, "has no %q rule as kubebuilder's go/v4 scaffold writes it", target)
	}
	end := start + 1
	for end < len(lines) && strings.HasPrefix(lines[end], "\t") {
		end++
	}
	return splice(lines, start, end, rule), nil
}

// replaceVariable replaces the assignment of name (with its continuation lines) and the
// comment lines right above it with text.
func replaceVariable(lines []string, name, text string) ([]string, error) {
	start := -1
	for i, line := range lines {
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"?=") || strings.HasPrefix(line, name+"=") {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, fileErrorf(makefilePath, "has no %s assignment as kubebuilder's go/v4 scaffold writes it", name)
	}
	end := start + 1
	for end < len(lines) && strings.HasSuffix(strings.TrimRight(lines[end-1], "\n"), "\\") {
		end++
	}
	for start > 0 && strings.HasPrefix(lines[start-1], "#") {
		start--
	}
	return splice(lines, start, end, text), nil
}

func splice(lines []string, start, end int, text string) []string {
	out := append([]string{}, lines[:start]...)
	if text != "" {
		out = append(out, strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n")...)
		out[len(out)-1] += "\n"
	}
	return append(out, lines[end:]...)
}
