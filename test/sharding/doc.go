// Package sharding holds the multi-process tests of sharding (issue #13): three demo
// managers, started as processes with distinct --shard-identity values against one
// control plane (envtest's kube-apiserver and etcd, with and without the
// ShardedListAndWatch feature gate), split Apps and their pods by namespace; three
// in-process caches split ConfigMaps by uid; a replica is killed and restarted; the
// replicas' reconcile logs are checked for overlapping reconciles of one key; and the
// bytes each replica read from the API server are compared with one unsharded manager's.
//
// The end-to-end tests carry the build tag `sharding` (run them with `make
// test-sharding`); the checkers they rely on (reconcile log overlaps, metric scraping,
// balance, process handling) are unit-tested without it.
package sharding
