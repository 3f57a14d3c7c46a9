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

// Package bench is the harness behind `make bench`: it measures deltacache against
// controller-runtime's cache and client-go's SharedIndexInformer on the same work in
// the same run, and reports every figure with the ratio deltacache / peer.
//
// Files, in the order a run uses them:
//
//	pods.go            Layout: the pods (labels, annotations, container, node) and where they go
//	controlplane.go    envtest kube-apiserver and etcd; seeding pods with a field manager
//	caches.go          the contenders' caches behind one read API (PodReader)
//	cache_workload.go  section A (and B6): sync time, heap per pod, peak RSS, Get and Lists
//	memlw.go           the in-process ListerWatcher of the pipeline workloads
//	memoryapi.go       an in-process API (http.RoundTripper) that fills the caches for B6
//	pipeline.go        B1–B3, B5: initial sync, update throughput, memory for a stuck handler
//	store_workload.go  B4: store writes with and without List readers
//	sharding*.go       E: R = 1–4 uid-sharded replicas at once on a ShardedListAndWatch
//	                   server (sharding.go: figures and a round's sum; _workload: one
//	                   replica's child; _run: gated server, Leases, the R children; _report)
//	operator*.go       O: the demo operator's manager on each cache under pod churn
//	                   (operator.go: the child and its figures; _churn: the pod changes
//	                   and the App watch that times them; _run: server, Apps, rounds)
//	latency.go         L: pkg/cache's BenchmarkEventToHandler run once per round, its
//	                   output read into p50 and p99 per rate
//	kinds_workload.go  C: Secrets and App CRD objects, one kind per child
//	footprint.go       D: where a cached pod's bytes go, layer by layer, in process
//	restart*.go        R: a cache's restart from its snapshots (resumed, diffed, cold)
//	measure.go         heap after GC, VmHWM, VmRSS, timing loops
//	child.go           every measurement runs in a child process of the bench binary
//	plan.go, run.go    sizes (default and quick), sections, the order of the run
//	results.go         medians and paired ratios
//	targets.go         the project's goals as bounds on ratios
//	report.go, chart.go, machine.go   docs/benchmarks.md and its PNG chart
//
// The command is test/bench/cmd. The package's testing.B benchmarks (bench_test.go)
// cover the same hot paths for benchstat; its tests check the harness itself with tiny
// sizes and never time anything.
package bench
