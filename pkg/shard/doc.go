// Package shard splits the work of one operator among its replicas: the
// replicas form a ring of coordination.k8s.io Leases (one per replica,
// renewed; the members are the unexpired Leases), the 64-bit FNV-1a hash
// space of the shard field (KEP-5866) is cut into NumSlots equal slots, and
// every slot is owned by one member, chosen by rendezvous hashing.
//
// A replica serves a slot (caches and reconciles its objects) only once the
// slot's previous owner released it or the owner's Lease expired; see Ring
// for the hand-off protocol. The package knows nothing of controller-runtime:
// a Ring tells its Consumer which slots to serve, and pkg/cache turns them into
// shard selectors of informers (informer.ShardSelector).
package shard
