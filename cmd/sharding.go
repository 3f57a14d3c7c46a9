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
	"flag"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
	dcache "github.com/deltacache/deltacache/pkg/cache"
	"github.com/deltacache/deltacache/pkg/shard"
)

// shardFlags are the flags of sharding: N replicas of the manager, each caching and
// reconciling the Apps (and their Pods) of its share of the namespaces.
type shardFlags struct {
	identity       string
	ring           string
	leaseNamespace string
	leaseDuration  time.Duration
	reconcileLog   string
}

func (f *shardFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.identity, "shard-identity", "",
		"This replica's identity in the shard ring (e.g. its pod name, from the downward API). "+
			"Non-empty enables sharding: Apps and Pods are split among the replicas by namespace. "+
			"Incompatible with --leader-elect.")
	fs.StringVar(&f.ring, "shard-ring", "deltacache-demo", "Name of the shard ring, shared by the replicas.")
	leaseNS := os.Getenv("POD_NAMESPACE")
	if leaseNS == "" {
		leaseNS = "default"
	}
	fs.StringVar(&f.leaseNamespace, "shard-lease-namespace", leaseNS,
		"Namespace of the ring's Leases (default: $POD_NAMESPACE, else default).")
	fs.DurationVar(&f.leaseDuration, "shard-lease-duration", shard.DefaultLeaseDuration,
		"A replica whose Lease is not renewed for this long is gone and its namespaces are taken over; "+
			"Leases are renewed every fifth of it.")
	fs.StringVar(&f.reconcileLog, "reconcile-log", "",
		"If set, append one JSON line per App reconcile to this file: replica, key, start, end.")
}

// enabled reports whether sharding is on.
func (f *shardFlags) enabled() bool { return f.identity != "" }

// check returns an error for flags that do not go together.
func (f *shardFlags) check(leaderElect bool) error {
	if f.enabled() && leaderElect {
		return errors.New("--shard-identity and --leader-elect are exclusive: sharded replicas all run, " +
			"each reconciling its share; leave leader election off")
	}
	return nil
}

// cacheOptions returns the cache options of sharding: none when it is off.
func (f *shardFlags) cacheOptions() []dcache.Option {
	if !f.enabled() {
		return nil
	}
	return []dcache.Option{dcache.WithSharding(dcache.Sharding{
		Ring: shard.Options{Namespace: f.leaseNamespace, Name: f.ring, Identity: f.identity,
			LeaseDuration: f.leaseDuration},
		// An App and its Pods live in one namespace: shard them together.
		ByNamespace: []client.Object{&demov1alpha1.App{}, &corev1.Pod{}},
	})}
}

// replica names this process in the reconcile log: its shard identity, else the host
// name.
func (f *shardFlags) replica() string {
	if f.identity != "" {
		return f.identity
	}
	host, _ := os.Hostname()
	return host
}
