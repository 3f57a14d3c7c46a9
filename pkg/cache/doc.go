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

// Package cache is deltacache's implementation of controller-runtime's cache.Cache.
//
// A Manager uses it through manager.Options.NewCache (imported as dcache, since
// controller-runtime's cache package usually sits beside it):
//
//	import dcache "github.com/deltacache/deltacache/pkg/cache"
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
//		NewCache: dcache.NewWith(dcache.WithLabelIndexes("app")),
//	})
//
// The design of record — the data path from the API server's response to a Get, the
// package map, the vocabulary and the invariants with the tests that pin them — is
// docs/architecture.md in the repository.
//
// The cache owns one informer per (GroupVersionKind, shape, scope). The shape is the Go
// type the caller asked for: a typed object from the Scheme (listed and watched through
// a REST client, protobuf for built-in types), *unstructured.Unstructured (dynamic
// client) or *metav1.PartialObjectMetadata (metadata client). The scope is a namespace,
// or all of them, as DefaultNamespaces and ByObject configure. Informers come from
// deltacache's own pkg/informer (Reflector → DeltaFIFO → Indexer → SharedIndexInformer);
// they are created lazily on the first Get, List, GetInformer or IndexField of a kind,
// started with the cache, and can be removed with RemoveInformer.
//
// Reads follow controller-runtime's CacheReader: Get and List return deep copies unless
// UnsafeDisableDeepCopy is set (under compact storage, objects decoded for the caller), NotFound errors name the kind, MatchingFields needs an
// index registered with IndexField ("field:<name>", read as "<ns>/<v>" and
// "__all_namespaces/<v>", each object filed once per value: see Cache.IndexField). Beyond controller-runtime, label keys declared with
// WithLabelIndexes are indexed for every kind as "label:<key>", and a List whose label
// selector has an equality or set-membership requirement on such a key is answered from
// that index instead of a scan of the namespace or of every object; ListStats reports
// which path each List took.
//
// Every cache.Options field of controller-runtime v0.25 is honoured with controller-runtime's
// precedence (ByObject → DefaultNamespaces[namespace] → Default*). NewInformer too: a
// kind whose informer it builds as something other than deltacache's own runs that
// informer, cached by controller-runtime's informer cache, without deltacache's compact
// storage, label indexes, bounded handler queues and sharding (see New). The
// conformance suite (conformance_test.go) runs the same cases against
// controller-runtime's cache.New and this package's New in envtest. Every deliberate
// difference is listed in the README ("Differences from controller-runtime's cache"),
// each with the test that pins it, and in conformance_test.go: merged notifications,
// contained panics (WithCrashOnHandlerPanic), stripped managedFields
// (WithKeepManagedFields), apiVersion/kind on typed handler objects only with
// WithTypeMetaOnHandlerObjects (typed objects reach transforms, index functions, handlers
// and GetStore/GetIndexer with an empty TypeMeta, as controller-runtime's), a stricter MatchingFields check, early sync failure
// (WithWaitThroughSyncErrors), a per-call UnsafeDisableDeepCopy(false) honoured, kinds
// missing from the Scheme served as unstructured by GetInformerForKind, objects handed
// out that are not the cache's own under compact storage (WithoutCompactStorage), and a
// controller started before its CRD waiting for it.
//
// # Errors are surfaced, not waited out
//
// A kind the RESTMapper does not know (a CRD that is not installed) is a
// *meta.NoKindMatchError from Get, List and IndexField, at once; nothing is remembered,
// so the first call after the CRD is installed creates the informer (controller-runtime's
// dynamic RESTMapper re-discovers the group on a miss). A blocking GetInformer of such a
// kind on a started cache waits for it instead (asking the RESTMapper again every
// 500 ms), so a controller started before its CRD starts soon after the CRD is
// established; a non-blocking one fails at once. An informer whose list or watch fails
// with an error that retrying will not fix (Forbidden, Unauthorized, a resource that is
// no longer served) makes a blocking read return that error promptly, and
// WaitForCacheSync return false once every informer that has not synced is in that
// state; SyncError(gvk) and SyncErrors return the errors (WithWaitThroughSyncErrors
// restores controller-runtime's waiting). Each failed attempt is logged once, when its
// retry is scheduled, with the delay; WithBackoff sets the delays. ReadyzCheck and
// HealthzCheck turn the informers' state into the Manager's readyz (every informer
// synced, or the reason it has not) and healthz (no informer stalled) checks.
//
// # Read your writes
//
// The cache implements cacheapi.Informers, so controller-runtime's
// client.CacheOptions.EnableReadYourWritesConsistency works with it. For one object,
// WaitForResourceVersion(ctx, obj) waits until the cache holds obj at the
// resourceVersion a write returned (or a newer one), and WaitForDeletion(ctx, obj)
// until it no longer holds it.
//
// # Lean by default
//
// Built-in kinds travel as protobuf (the typed REST clients ask for
// application/vnd.kubernetes.protobuf unless the rest.Config sets a ContentType);
// CRDs travel as JSON. Before an object is stored, after the user's transform (which
// runs once per received object), metadata.managedFields are stripped
// (WithKeepManagedFields keeps them). Under the default StorageAuto, built-in kinds and
// metadata-only objects are then held encoded as protobuf, typed CRD kinds in the Plan
// codec's encoding and unstructured objects as CBOR (compact storage), each compressed
// against dictionaries of its kind (WithoutCompression turns that off), and every read
// decodes them, which replaces the deep copy. A List checks a label selector on the
// stored labels before it decodes, and decodes only the objects it returns. Kinds read
// with UnsafeDisableDeepCopy, and every kind while the mutation detector is on, are
// held decoded under StorageAuto, with repeated metadata strings — namespace,
// generateName, label keys and values, annotation keys, owner references — interned by
// a bounded interner shared by the cache's informers (WithoutStringInterning turns that
// off). WithStorage and WithStorageFor choose per kind (StorageCompact, StorageDecoded);
// DELTACACHE_STORAGE in the environment overrides the default mode, and
// DELTACACHE_COMPRESSION=off turns compression off.
// BenchmarkStoredPodHeap10k measures the heap a cached pod holds.
//
// # Sharding and the drift check
//
// WithSharding splits chosen kinds among replicas that form a ring of Leases
// (pkg/shard): by object uid or by namespace, each informer listing and watching only
// its share (with KEP-5866's shardSelector where the server filters, a client-side
// filter where it does not). A Get of an absent key is NotFound where this replica
// would hold the object, and an error wrapping ErrNotInShard (not a NotFound) where it
// cannot know (see WithSharding); ShardedReconciler runs a reconciler only for
// requests of this replica's share. WithConsistencyCheck compares each informer's
// store with a metadata-only LIST of its scope (of a sharded kind: its shard) at an
// interval and heals drift with a relist (docs/consistency-check.md).
//
// # Safe zero-copy
//
// Reads with UnsafeDisableDeepCopy (per call, ByObject or DefaultUnsafeDisableDeepCopy)
// and event handlers receive the cached objects themselves. The mutation detector
// (WithMutationDetector, or DELTACACHE_MUTATION_DETECTOR=true in the environment) is a
// test-mode check that keeps a deep copy of every stored object version and reports a
// *MutationError, with a diff of the fields that changed, when a cached object no
// longer equals its copy: on the next read of it, when a newer version arrives,
// periodically, and on CheckMutations.
//
// # Files
//
//	options.go                   every setting: Config, Option and every With*, StorageMode, Sharding,
//	                             the defaults and their validation
//	cache.go                     Cache, New, NewWith, GetInformer*, RemoveInformer, Start, WaitForCacheSync
//	scope.go                     the watch scopes of a kind (ByObject → DefaultNamespaces → defaults)
//	informer_factory.go          the informer factory: newEntry, newScopedInformer (indexes, transform,
//	                             codec, drift check, shard selector, mutation detector)
//	listwatch.go                 the ListerWatcher of a scope (typed REST, dynamic or metadata client;
//	                             a typed REST client whose decoder keeps each object's bytes for
//	                             a protobuf codec, codec.WireCapture)
//	storage.go                   the storage mode and codec of each kind
//	transform.go                 the store transform: TypeMeta, user transform, managedFields, interning
//	intern.go                    the interner: the bounded table of shared metadata strings
//	informers.go                 shapes, entries and the informer map; a synced scope's lookup
//	                             (readyScope); waiting for a scope's sync
//	foreign_informers.go         kinds whose informer Options.NewInformer built: served by
//	                             controller-runtime's informer cache
//	multi_namespace_informer.go  the informer GetInformer returns for several namespaces
//	missing_kinds.go             a blocking GetInformer waiting for a kind not served yet
//	reader.go                    Get and List: scope, wait, path (index or scan), copy
//	list_items.go                filling a List's Items (deep copies written in place)
//	list_slots.go                a List one label index answers: Items decoded in place
//	field_index.go               IndexField, "field:<name>" indexes and their lookups
//	label_index.go               "label:<key>" indexes (WithLabelIndexes) and their lookups
//	adaptive_index.go            automatic "label:<key>" indexes for the keys Lists scan for
//	stats.go                     ListStats: the path each List took, and its counter
//	read_your_writes.go          read your writes: WaitForResourceVersion, WaitForDeletion
//	sync_errors.go               errors that keep informers from syncing: SyncError, SyncErrors
//	health.go                    ReadyzCheck and HealthzCheck
//	sync_progress.go             what readyz and WaitForCacheSync say of handlers not synced yet
//	snapshot.go                  WithSnapshots: each informer's snapshot file, identity and diff
//	drift_check.go               the drift check's metadata-only list of a scope
//	sharding.go                  the ring and the shard selector of each sharded kind; NotInShardError
//	sharding_namespace.go        sharding by namespace: following the Namespaces, NamespaceDebounce
//	sharding_get.go              a sharded Get of an absent key: NotFound or ErrNotInShard
//	sharding_reconciler.go       ShardedReconciler: no key reconciled by two replicas at once
//	mutation_detector.go         the mutation detector and MutationError
//	handler_label.go             the metric label of a controller-runtime handler
//	metrics.go                   the informers' metrics registered with controller-runtime's registry
//	apiserver_bytes.go           the bytes read from the API server, counted
//	doc.go                       this overview
package cache
