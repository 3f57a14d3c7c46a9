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

// Package deltacache holds the files of this repository that the kubebuilder plugin
// (cmd/kubebuilder-deltacache) copies into an operator project, so that the plugin ships
// them as they are here. The cache itself is package pkg/cache.
package deltacache

import _ "embed"

// EnvtestBinariesScript is hack/envtest-binaries.sh: it builds kube-apiserver and etcd for
// envtest from the Go module proxy, caching them per machine.
//
//go:embed hack/envtest-binaries.sh
var EnvtestBinariesScript string

// InformersDashboard is grafana/deltacache-informers.json, the Grafana dashboard of the
// deltacache_* metrics.
//
//go:embed grafana/deltacache-informers.json
var InformersDashboard string
