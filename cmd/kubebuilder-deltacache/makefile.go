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
	scriptUse = `$$(bash ` + scriptPath + ` "$(LOCALBIN)")`
)

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
	@bash ` + scriptPath + ` "$(LOCALBIN)"
`

const envtestRule = `envtest: ## Build kube-apiserver and etcd for envtest from Go modules (cached per machine).
	@bash ` + scriptPath + ` "$(LOCALBIN)" >/dev/null
`

// editMakefile makes the Makefile's envtest binaries come from hack/envtest-binaries.sh
// instead of setup-envtest, which downloads them: the envtest and setup-envtest rules are
// replaced (and the $(ENVTEST) rule that installed setup-envtest removed), the test recipe
// takes KUBEBUILDER_ASSETS from the script, and ENVTEST_K8S_VERSION is a full version. Each
// anchor is a line kubebuilder's go/v4 scaffold writes; a missing one is an error.
func editMakefile(src string) (string, error) {
	if strings.Contains(src, scriptPath) {
		return "", fileErrorf(makefilePath, "already uses %s: deltacache is set up in this project", scriptPath)
	}
	lines := strings.SplitAfter(src, "\n")
	var err error
	if lines, err = replaceVariable(lines, "ENVTEST_K8S_VERSION", envtestK8sVersion); err != nil {
		return "", err
	}
	if lines, err = replaceRule(lines, "setup-envtest", setupEnvtestRule); err != nil {
		return "", err
	}
	if lines, err = replaceRule(lines, "envtest", envtestRule); err != nil {
		return "", err
	}
	if lines, err = replaceRule(lines, "$(ENVTEST)", ""); err != nil {
		return "", err
	}
	out := strings.Join(lines, "")
	if strings.Count(out, setupEnvtestUse) != 1 {
		return "", fileErrorf(makefilePath, "the test recipe does not set KUBEBUILDER_ASSETS=\"%s\" "+
			"as kubebuilder's go/v4 scaffold does", setupEnvtestUse)
	}
	return strings.Replace(out, setupEnvtestUse, scriptUse, 1), nil
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
