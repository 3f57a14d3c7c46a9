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

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
)

// Workloads a child process runs.
const (
	// WorkloadAPIServer measures a cache against the envtest API server (section A).
	WorkloadAPIServer = "apiserver"
	// WorkloadMemoryAPI measures a cache's reads over the in-memory API (section B).
	WorkloadMemoryAPI = "memory-api"
	// WorkloadSync measures an informer's initial sync (section B).
	WorkloadSync = "sync"
	// WorkloadSyncSmallObjects measures the initial sync of metadata-sized pods
	// listed at once (section B2m).
	WorkloadSyncSmallObjects = "sync-small-objects"
	// WorkloadThroughput measures an informer's event throughput (section B).
	WorkloadThroughput = "throughput"
	// WorkloadStuck measures the memory an informer holds for a stuck handler (B).
	WorkloadStuck = "stuck"
	// WorkloadStore measures store writes with and without List readers (B).
	WorkloadStore = "store"
	// WorkloadKind measures a cache of one kind other than pods on the envtest API
	// server (section C).
	WorkloadKind = "kind"
	// WorkloadFootprint takes the heap of a cached pod apart (section D).
	WorkloadFootprint = "footprint"
	// WorkloadSharding measures one replica, sharded or not, of section E.
	WorkloadSharding = "sharding"
	// WorkloadRestart measures one start and stop of a cache of pods and ConfigMaps
	// (section R).
	WorkloadRestart = "restart"
	// WorkloadOperator runs the demo operator's manager (section O).
	WorkloadOperator = "operator"
)

// ChildSpec is what one child process measures. Fields a workload does not use are
// zero.
type ChildSpec struct {
	Workload  string    `json:"workload"`
	Contender Contender `json:"contender"`
	// Pods is the number of pods (apiserver, memory-api, sync, sharding).
	Pods int `json:"pods,omitempty"`
	// Keys, Events, Few and Many size the event workloads (throughput, stuck, store).
	Keys   int `json:"keys,omitempty"`
	Events int `json:"events,omitempty"`
	Few    int `json:"few,omitempty"`
	Many   int `json:"many,omitempty"`
	// Readers is the number of List goroutines of the store workload.
	Readers int `json:"readers,omitempty"`
	// Reps is the number of repetitions of the read figures (apiserver, memory-api).
	Reps int `json:"reps,omitempty"`
	// OpTime is the minimum time of one read figure; Duration that of one store figure.
	OpTime   time.Duration `json:"opTime,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	Seed     uint64        `json:"seed,omitempty"`
	// Kubeconfig is the path of the API server's kubeconfig (apiserver, kind).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Kind is the kind of section C (KindSecret, KindApp, KindAppUnstructured).
	Kind string `json:"kind,omitempty"`
	// SnapshotDir is deltacache's snapshot directory (restart).
	SnapshotDir string `json:"snapshotDir,omitempty"`
	// ReadyFile is the file the operator child creates once its cache synced.
	ReadyFile string `json:"readyFile,omitempty"`
	// Shard is the ring membership of a sharded replica of section E (sharding).
	Shard ShardReplica `json:"shard,omitzero"`
}

// ChildFlag is the flag that makes the bench binary run one ChildSpec (JSON) and print
// its Values as JSON on stdout.
const ChildFlag = "child"

// RunChild runs spec in this process.
func RunChild(ctx context.Context, spec ChildSpec) (Values, error) {
	switch spec.Workload {
	case WorkloadAPIServer:
		cfg, err := restConfigFromFile(spec.Kubeconfig)
		if err != nil {
			return nil, err
		}
		return CacheWorkload{Contender: spec.Contender, Config: cfg, Layout: NewLayout(spec.Pods),
			Reps: spec.Reps, OpTime: spec.OpTime, Seed: spec.Seed}.Run(ctx)
	case WorkloadKind:
		cfg, err := restConfigFromFile(spec.Kubeconfig)
		if err != nil {
			return nil, err
		}
		return KindWorkload{Contender: spec.Contender, Config: cfg, Kind: spec.Kind,
			Layout: NewKindsLayout(spec.Pods), OpTime: spec.OpTime, Seed: spec.Seed}.Run(ctx)
	case WorkloadMemoryAPI:
		l := NewLayout(spec.Pods)
		api, err := NewMemoryAPI(ServerPods(l), strconv.Itoa(spec.Pods+1))
		if err != nil {
			return nil, err
		}
		return CacheWorkload{Contender: spec.Contender, Config: api.Config(), Mapper: api.Mapper(), Layout: l,
			Reps: spec.Reps, OpTime: spec.OpTime, Seed: spec.Seed}.Run(ctx)
	case WorkloadSharding:
		if err := spec.Shard.validate(); err != nil {
			return nil, err
		}
		cfg, err := restConfigFromFile(spec.Kubeconfig)
		if err != nil {
			return nil, err
		}
		return ShardWorkload{Contender: spec.Contender, Config: cfg, Replica: spec.Shard}.Run(ctx)
	case WorkloadRestart:
		cfg, err := restConfigFromFile(spec.Kubeconfig)
		if err != nil {
			return nil, err
		}
		return RestartWorkload{Contender: spec.Contender, Config: cfg, SnapshotDir: spec.SnapshotDir}.Run(ctx)
	case WorkloadOperator:
		cfg, err := restConfigFromFile(spec.Kubeconfig)
		if err != nil {
			return nil, err
		}
		return OperatorWorkload{Contender: spec.Contender, Config: cfg, ReadyFile: spec.ReadyFile,
			Commands: os.Stdin}.Run(ctx)
	case WorkloadFootprint:
		return MeasureFootprint(spec.Pods)
	case WorkloadSyncSmallObjects:
		return MeasureSyncSmallObjects(ctx, spec.Contender, spec.Pods)
	case WorkloadSync:
		return MeasureSync(ctx, spec.Contender, spec.Pods)
	case WorkloadThroughput:
		return MeasureThroughput(ctx, spec.Contender, spec.Keys, spec.Events)
	case WorkloadStuck:
		return MeasureStuckHandler(ctx, spec.Contender, spec.Keys, spec.Few, spec.Many)
	case WorkloadStore:
		return MeasureStoreWrites(spec.Contender, spec.Keys, spec.Readers, spec.Duration)
	default:
		return nil, fmt.Errorf("unknown workload %q", spec.Workload)
	}
}

// restConfigFromFile reads the kubeconfig at path.
func restConfigFromFile(path string) (*rest.Config, error) {
	kubeconfig, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return RESTConfigFromKubeconfig(kubeconfig)
}

// SpawnChild runs spec in a new process of executable exe (the bench binary, with
// -child), with env added to this process's environment, and returns its Values. The
// child's stderr goes to stderr.
func SpawnChild(ctx context.Context, exe string, spec ChildSpec, env []string, stderr io.Writer) (Values, error) {
	arg, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, "-"+ChildFlag, string(arg))
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", spec.Workload, spec.Contender, err)
	}
	var v Values
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		return nil, fmt.Errorf("%s %s: decoding the child's output %q: %w", spec.Workload, spec.Contender, out.String(), err)
	}
	return v, nil
}
