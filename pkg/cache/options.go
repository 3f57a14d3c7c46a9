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

package cache

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/shard"
)

// This file holds every setting of the cache: Config (deltacache's own settings, next
// to controller-runtime's cache.Options, which NewWith's function takes as it is), the
// Options that set it, the storage modes, sharding's settings, the defaults and their
// validation. The code they configure lives in the files of their concern (storage.go,
// drift_check.go, sharding*.go, ...).

// Config holds deltacache's own settings, the ones controller-runtime's cache.Options has
// no field for. The zero value is valid and gives controller-runtime's behaviour plus
// deltacache's defaults, as documented per field. Build it with Options passed to NewWith.
type Config struct {
	// LabelIndexes are label keys indexed for every kind as index "label:<key>", read
	// (ByIndex, IndexKeys) with values "<namespace>/<labelvalue>" and
	// "__all_namespaces/<labelvalue>" (cluster-scoped objects only answer the latter),
	// each object filed once under its label value. A List whose label selector has an "=", "==" or "in"
	// requirement on one of these keys is answered from the index.
	// Zero value: no label indexes; label selectors are evaluated by scanning the
	// namespace index or every object, as controller-runtime does.
	LabelIndexes []string

	// DisableAdaptiveIndexes turns adaptive label indexes off (WithoutAdaptiveIndexes).
	// Zero value (false): the cache builds a "label:<key>" index by itself, in the
	// background, for an informer whose Lists keep scanning for label key: more than 3
	// scans within a minute, or one scan of 5,000 objects or more (a scan: a List with
	// an "=", "==" or "in" requirement that no index answers). At most 3 per informer,
	// none for a key with more than half as many values as objects, dropped after 10
	// minutes without a List using it; see adaptive_index.go. Keys of LabelIndexes are
	// indexed up front as before and never automatically.
	DisableAdaptiveIndexes bool

	// Logger is the logger handed to every informer (through its run context) and used
	// for the cache's own messages.
	// Zero value (which logr.Discard() also is): controller-runtime's log.Log named
	// "deltacache", so ctrl.SetLogger applies to it.
	Logger logr.Logger

	// ConsistencyCheckInterval turns on the production consistency checker (see
	// WithConsistencyCheck): every informer compares its store with a metadata-only
	// LIST of its scope this often and relists on drift.
	// Zero value: off.
	ConsistencyCheckInterval time.Duration

	// ListPageSize is the page size of the paginated LIST an informer uses for its
	// initial list and every relist.
	// Zero value: pkg/informer's default (500).
	ListPageSize int64

	// WaitThroughSyncErrors makes a blocking Get, List or GetInformer, and
	// WaitForCacheSync, wait for the informers to sync (or for the context to end) even
	// when they report an error that retrying will not fix, such as Forbidden,
	// Unauthorized or NotFound.
	// Zero value (false): a read returns such an error promptly, wrapped so that
	// apierrors.IsForbidden and friends still recognise it (a NotFound list, meaning the
	// resource is not served, becomes a *meta.NoKindMatchError), and WaitForCacheSync
	// returns false once every informer that has not synced reports one. Transient
	// errors (timeouts, connection failures, 5xx, 429) never end a wait early; if the
	// context ends first, a read's Timeout error also carries the informer's last error.
	// Set it to true for controller-runtime's behaviour (wait until the context ends).
	WaitThroughSyncErrors bool

	// KeepManagedFields keeps metadata.managedFields in the cached objects.
	// Zero value (false): managedFields are stripped from every object before it is
	// stored, after the user's transform (ByObject.Transform, else DefaultTransform),
	// as controller-runtime's cache.TransformStripManagedFields does. They are
	// server-side-apply bookkeeping that controllers rarely read and often the largest
	// part of an object's metadata. An Update of an object read from the cache leaves
	// the server's managedFields unchanged (nil means "not specified").
	KeepManagedFields bool

	// DisableStringInterning stores the objects' strings as decoded.
	// Zero value (false): the namespace, generateName, label keys and values,
	// annotation keys and owner references' apiVersion, kind and name of every cached
	// object are replaced by one shared copy per distinct string (a bounded intern
	// table per Cache; see interner), so thousands of pods of one Deployment share
	// one "app", one "pod-template-hash" value and one namespace string.
	DisableStringInterning bool

	// Backoff sets the delays between failed list/watch attempts of every informer;
	// each failure is logged once, when its retry is scheduled.
	// Zero value: informer.DefaultBackoff (client-go's: 0.8s doubling to 30s, full
	// jitter, reset after 2 minutes without failures).
	Backoff informer.Backoff

	// CrashOnHandlerPanic re-panics when an event handler registered on one of the
	// cache's informers panics, crashing the process as controller-runtime's cache
	// does (client-go's handler goroutines re-panic through HandleCrash).
	// Zero value (false): the panic is recovered and logged with its stack, counted in
	// deltacache_handler_panics_total, and the handler goes on with the next event;
	// the informer keeps running (see pkg/informer's Options.CrashOnHandlerPanic).
	CrashOnHandlerPanic bool

	// TypeMetaOnHandlerObjects sets apiVersion and kind on every typed object as the
	// informer receives it, so that transforms, index functions, event handlers and
	// GetStore/GetIndexer see them.
	// Zero value (false): typed objects there have an empty TypeMeta, as in
	// controller-runtime's cache (client-go's typed decoding clears it); Get and List
	// set apiVersion and kind on the copies they return, as controller-runtime's do.
	// Unstructured and metadata-only objects carry them either way, as in
	// controller-runtime.
	TypeMetaOnHandlerObjects bool

	// MutationDetector, when true, keeps a deep copy of every object the cache stores
	// and reports a *MutationError when a cached object no longer equals its copy:
	// on the next Get or List that reads it, when a newer version of it arrives, every
	// MutationCheckPeriod, and on CheckMutations. It catches callers that modify
	// objects read with UnsafeDisableDeepCopy or received by event handlers. It doubles
	// the memory of the cache and costs a comparison per read: a test-mode setting.
	// Zero value (false): off, unless the environment variable
	// DELTACACHE_MUTATION_DETECTOR is "true" when the cache is built.
	MutationDetector bool

	// MutationCheckPeriod is the period of the detector's full comparison.
	// Zero value: one second (client-go's cache mutation detector's period).
	MutationCheckPeriod time.Duration

	// Storage is how the objects of every kind are held: compact (encoded, decoded on
	// every read, which replaces the deep copy a read makes anyway) or decoded.
	// Zero value (StorageAuto, unless the environment variable DELTACACHE_STORAGE is
	// "Compact" or "Decoded" when the cache is built): compact where it wins, measured — built-in kinds and
	// metadata-only objects as protobuf, unstructured objects as CBOR — and decoded for
	// typed CRD types and for kinds read with UnsafeDisableDeepCopy (see StorageMode).
	// With compact storage, objects handed to handlers and to UnsafeDisableDeepCopy
	// readers are no longer the cache's own: modifying them cannot corrupt it.
	Storage StorageMode

	// DisableCompression stores compact objects as their codec encodes them.
	// Zero value (false, unless the environment variable DELTACACHE_COMPRESSION is
	// "off" when the cache is built): each informer with compact storage compresses
	// its objects with S2 against dictionaries of objects of its kind it has seen
	// (codec.Compressed): the first made from its first 256 objects, rebuilt when
	// compression falls below 0.8 of what a dictionary first achieved; objects that
	// do not compress by 1/16 are stored as they are. The ratio is the metric
	// deltacache_informer_compression_ratio.
	DisableCompression bool

	// StorageFor overrides Storage per kind, keyed like controller-runtime's
	// cache.Options.ByObject (the object's GVK; every shape of the kind).
	// Zero value: Storage applies to every kind.
	StorageFor map[client.Object]StorageMode

	// OnMutation receives every *MutationError the detector finds (except those
	// returned by CheckMutations); it is called from the goroutine that found it
	// (a reader, an informer or the periodic check).
	// Zero value (nil): panic with the *MutationError, as client-go's
	// KUBE_CACHE_MUTATION_DETECTOR does.
	OnMutation func(err error)

	// Sharding splits the objects of some kinds among the replicas of the operator
	// (see WithSharding). Zero value (nil): every kind is cached whole.
	Sharding *Sharding
	// SnapshotDir turns on snapshots (see WithSnapshots): every informer with compact
	// storage writes its stored bytes to a file in this directory every
	// SnapshotInterval (5 minutes) and when the cache stops, and a new cache on the same directory starts from that file,
	// caught up with the server, instead of listing everything.
	// Zero value (""): off; every start lists in full, as controller-runtime's does.
	SnapshotDir string
	// SnapshotInterval is how often a synced informer writes its snapshot while the
	// cache runs (one more write is made when the cache stops).
	// Zero value: 5 minutes.
	SnapshotInterval time.Duration
	// SnapshotSecrets writes Secrets (core/v1) to snapshots too.
	// Zero value (false): Secrets are never written to disk; they start cold.
	SnapshotSecrets bool
	// SnapshotVersion, if set, is what identifies the program in the snapshots instead
	// of a hash of its executable (see informer.Snapshot.Version).
	// Zero value (""): only the same executable resumes a snapshot.
	SnapshotVersion string

	// RefusedNotReadyAfter is how long an informer that has synced may be refused by
	// the API server (its last list/watch error Forbidden or Unauthorized, typically
	// RBAC revoked) before the readyz check fails naming its kind: meanwhile the cache
	// serves the kind's data as it was when the refusals began.
	// Zero value: DefaultRefusedNotReadyAfter (one minute); negative: never (readyz
	// then only covers informers that have not synced).
	RefusedNotReadyAfter time.Duration

	// MinWatchTimeout: each watch asks the API server to end it after a random time in
	// [MinWatchTimeout, 2×MinWatchTimeout] (the request's timeoutSeconds); the informer
	// then watches again from its last resourceVersion. A watch is authorised when it
	// is opened, so this also bounds how long a revoked permission goes unnoticed on a
	// kind that keeps streaming.
	// Zero value: 5 minutes (client-go's).
	MinWatchTimeout time.Duration

	// WatchStallTimeout: an open watch that delivers nothing (no event, no bookmark)
	// for this long is abandoned and re-opened from the informer's last
	// resourceVersion (no relist), logged once and counted in
	// deltacache_informer_errors_total{op="watch",reason="WatchStalled"}: a proxy or
	// load balancer that keeps the connection but forwards nothing is noticed then,
	// not at the watch's own timeout plus a minute (up to 11 minutes).
	// Zero value: 2 minutes (two of kube-apiserver's bookmark intervals); negative: off.
	WatchStallTimeout time.Duration
}

// Option sets a deltacache-only setting; pass Options to NewWith.
type Option func(*Config)

// WithLabelIndexes declares label keys indexed for every kind as index "label:<key>"
// (see Config.LabelIndexes). Keys must be valid label keys ("app",
// "app.kubernetes.io/name"); NewWith's cache constructor returns an error otherwise.
// Repeated keys are indexed once. Several calls accumulate.
func WithLabelIndexes(keys ...string) Option {
	return func(c *Config) {
		c.LabelIndexes = append(c.LabelIndexes, keys...)
	}
}

// WithoutAdaptiveIndexes turns adaptive label indexes off: label selectors on keys
// not declared with WithLabelIndexes are always answered by a scan, as in
// controller-runtime (see Config.DisableAdaptiveIndexes).
func WithoutAdaptiveIndexes() Option {
	return func(c *Config) {
		c.DisableAdaptiveIndexes = true
	}
}

// WithLogger sets the logger of the cache and its informers (see Config.Logger).
func WithLogger(log logr.Logger) Option {
	return func(c *Config) {
		c.Logger = log
	}
}

// WithListPageSize sets the page size of the informers' paginated LIST requests
// (see Config.ListPageSize). n must not be negative.
func WithListPageSize(n int64) Option {
	return func(c *Config) {
		c.ListPageSize = n
	}
}

// WithWaitThroughSyncErrors restores controller-runtime's behaviour of blocking reads
// until the informer syncs or the context ends, whatever errors the informer reports
// (see Config.WaitThroughSyncErrors).
func WithWaitThroughSyncErrors() Option {
	return func(c *Config) {
		c.WaitThroughSyncErrors = true
	}
}

// WithKeepManagedFields keeps metadata.managedFields in cached objects, which
// deltacache strips by default (see Config.KeepManagedFields).
func WithKeepManagedFields() Option {
	return func(c *Config) {
		c.KeepManagedFields = true
	}
}

// WithoutStringInterning stores objects' strings as decoded instead of interning the
// repeated ones (see Config.DisableStringInterning).
func WithoutStringInterning() Option {
	return func(c *Config) {
		c.DisableStringInterning = true
	}
}

// WithBackoff sets the delays between failed list/watch attempts of every informer
// (see Config.Backoff); zero fields take informer.DefaultBackoff's values.
func WithBackoff(b informer.Backoff) Option {
	return func(c *Config) {
		c.Backoff = b
	}
}

// WithRefusedNotReadyAfter sets how long a synced informer may be refused (Forbidden,
// Unauthorized) before the readyz check fails (see Config.RefusedNotReadyAfter); a
// negative d turns that off.
func WithRefusedNotReadyAfter(d time.Duration) Option {
	return func(c *Config) {
		c.RefusedNotReadyAfter = d
	}
}

// WithMinWatchTimeout sets the lower bound of every watch's server-side timeout (see
// Config.MinWatchTimeout).
func WithMinWatchTimeout(d time.Duration) Option {
	return func(c *Config) {
		c.MinWatchTimeout = d
	}
}

// WithWatchStallTimeout sets how long an open watch may deliver nothing before it is
// re-opened (see Config.WatchStallTimeout); a negative d turns that off.
func WithWatchStallTimeout(d time.Duration) Option {
	return func(c *Config) {
		c.WatchStallTimeout = d
	}
}

// WithCrashOnHandlerPanic makes a panicking event handler crash the process, as with
// controller-runtime's cache, instead of being recovered and logged (see
// Config.CrashOnHandlerPanic).
func WithCrashOnHandlerPanic() Option {
	return func(c *Config) {
		c.CrashOnHandlerPanic = true
	}
}

// WithTypeMetaOnHandlerObjects keeps apiVersion and kind on the typed objects that
// event handlers receive and GetStore/GetIndexer hold, which controller-runtime's
// cache leaves empty (see Config.TypeMetaOnHandlerObjects).
func WithTypeMetaOnHandlerObjects() Option {
	return func(c *Config) {
		c.TypeMetaOnHandlerObjects = true
	}
}

// WithMutationDetector turns the test-mode mutation detector on (see
// Config.MutationDetector). period is the period of the full comparison (0 = one
// second); onMutation receives each *MutationError (nil = panic).
func WithMutationDetector(period time.Duration, onMutation func(err error)) Option {
	return func(c *Config) {
		c.MutationDetector = true
		c.MutationCheckPeriod = period
		c.OnMutation = onMutation
	}
}

// StorageMode is how the cache holds the objects of a kind.
type StorageMode string

const (
	// StorageAuto (the zero value) holds objects compact where that wins, measured
	// (docs/benchmarks.md): built-in kinds as protobuf, metadata-only objects as
	// protobuf, unstructured objects as CBOR, typed objects of kinds without protobuf
	// (CRD types) in the Plan codec's encoding, planned from their Go type
	// (codec.Plan), or decoded if their type holds what it cannot plan (an interface
	// or an unexported field). A kind read with UnsafeDisableDeepCopy (by its ByObject,
	// DefaultNamespaces entry or DefaultUnsafeDisableDeepCopy) is held decoded: its
	// readers chose to share the cache's objects. So is every kind while the mutation
	// detector is on (Config.MutationDetector): it looks for code that modifies objects
	// shared with the cache, and only decoded storage shares them.
	StorageAuto StorageMode = ""
	// StorageCompact holds the kind's objects encoded whatever its shape (typed CRD
	// types in the Plan codec's encoding, or as CBOR if their type holds what it
	// cannot plan) and also when it is read with UnsafeDisableDeepCopy.
	StorageCompact StorageMode = "Compact"
	// StorageDecoded holds the kind's objects decoded, as controller-runtime's cache.
	StorageDecoded StorageMode = "Decoded"
)

// WithStorage sets how every kind's objects are held (see Config.Storage).
func WithStorage(mode StorageMode) Option {
	return func(c *Config) { c.Storage = mode }
}

// WithoutCompression stores compact objects uncompressed (see
// Config.DisableCompression).
func WithoutCompression() Option { return func(c *Config) { c.DisableCompression = true } }

// WithoutCompactStorage holds every kind's objects decoded, as controller-runtime's
// cache does (WithStorage(StorageDecoded)); StorageFor entries still apply.
func WithoutCompactStorage() Option { return WithStorage(StorageDecoded) }

// WithStorageFor sets how the objects of the kinds of objs are held, overriding
// Config.Storage for them (see Config.StorageFor). The kind is the object's GVK, as
// for controller-runtime's ByObject: it applies to the typed, unstructured and
// metadata-only informers of that kind. Several calls accumulate; a later one wins.
func WithStorageFor(mode StorageMode, objs ...client.Object) Option {
	return func(c *Config) {
		if c.StorageFor == nil {
			c.StorageFor = map[client.Object]StorageMode{}
		}
		for _, obj := range objs {
			c.StorageFor[obj] = mode
		}
	}
}

// WithConsistencyCheck turns on the production consistency checker
// (Config.ConsistencyCheckInterval): every interval (plus up to 10%), each informer
// lists its scope — namespace, selectors and, for a sharded kind (WithSharding), this
// replica's shard — as metadata only (pages of the cache's ListPageSize, default 500,
// RV "": a consistent read from etcd) and compares uid and resourceVersion per key with
// its store. Drift (objects missing, extra or stale) is counted in
// deltacache_consistency_drift_objects_total, logged in one line naming up to three keys
// of each kind, and healed by a relist at once; checks are counted by result in
// deltacache_consistency_checks_total. It catches watch streams that lose events
// without breaking (proxies, aggregated API servers), which nothing else detects. Cost
// per check and informer of N objects: ⌈N/500⌉ LIST requests and the metadata of N
// objects (docs/consistency-check.md has measured figures); choose an interval of
// minutes. interval ≤ 0 turns it off.
//
// With sharding, N is the replica's share when the server filters by shard selector
// (the ShardedListAndWatch gate), and every object of the kind when it does not (the
// check then filters what it receives, as the informer does); a check that falls while
// the replica's shard changes is skipped, not counted (see informer.ConsistencyCheck).
func WithConsistencyCheck(interval time.Duration) Option {
	return func(c *Config) {
		c.ConsistencyCheckInterval = interval
	}
}

// Sharding splits the objects of some kinds among the replicas of an operator (see
// WithSharding).
type Sharding struct {
	// Ring is the replicas' Lease ring: Namespace, Name (shared by the replicas) and
	// Identity (this replica's, e.g. its pod name) are required; LeaseDuration and
	// RenewInterval default as in pkg/shard. Clock and Logger: zero values are fine.
	Ring shard.Options
	// ByUID are the kinds sharded by object uid (objects that stand alone), keyed like
	// controller-runtime's ByObject: every shape (typed, unstructured, metadata-only)
	// and every namespace scope of the kind. The other kinds are cached whole by every
	// replica. ByUID and ByNamespace together need at least one kind, and a kind may
	// be in only one of them.
	ByUID []client.Object
	// ByNamespace are the kinds sharded by namespace (see WithSharding): every object
	// of a namespace goes to the replica that serves the namespace's slot
	// (shard.SlotOfNamespace), so that kinds a reconciler reads together (an App and
	// its Pods) stay together. Keyed like ByUID. Namespaced kinds only: a
	// cluster-scoped kind here is an error of New (when the RESTMapper knows the kind
	// then) or of the first informer of the kind.
	ByNamespace []client.Object
}

// WithSharding makes this replica cache only its share of the kinds of s.ByUID and
// s.ByNamespace. The replicas form a ring of coordination.k8s.io Leases in
// s.Ring.Namespace (the cache needs get, list, create, update and delete on leases
// there, and list and watch on namespaces with ByNamespace) and split the hash space
// among themselves (pkg/shard); each sharded informer lists and watches
// with the shardSelector of this replica's slots (KEP-5866), and filters on the
// client when the server does not honour it (no ShardedListAndWatch feature gate:
// memory shrinks, traffic does not). The ring runs with the cache (Start).
//
// Until the ring grants it slots, a replica's sharded informers hold nothing (they
// sync empty). When the replica's share changes, objects that leave it are dropped
// without a Delete notification to handlers (a hand-off is not a deletion) before the
// ring records their release, and objects that enter it are delivered as Adds;
// another replica serves a slot only after its owner released it or the owner's
// Lease expired. When Start's context ends, the replica leaves the ring (its Lease is
// deleted), so the others take its slots over at once. Reconcilers of sharded kinds
// wrapped with ShardedReconciler skip requests of slots not served, and a slot is
// released only once their reconciles of it have returned.
//
// Namespace sharding. The server's hash of a namespace name clusters (names that
// differ in their last characters hash close together), so ranges of it cannot
// balance; instead namespaces go to replicas by shard.SlotOfNamespace, and the cache
// watches Namespaces (one metadata-only, cluster-wide informer of its own: RBAC list
// and watch on namespaces) to give each informer of s.ByNamespace the selector of
// exactly the namespaces it owns: one one-hash range per namespace, sorted, equal
// hashes merged. A namespace created or deleted later changes that selector, which
// costs one relist of the namespace-sharded informers on the replica that owns it
// (the others' selectors do not change); changes are coalesced for
// NamespaceDebounce, so that a burst of namespaces costs one relist, not one per
// namespace. A change of the served slots applies at once. Objects of namespaces this
// replica does not own are never held (the client-side filter drops them when the
// server does not honour the selector). A selector longer than the server accepts
// (100,000 characters: about 1,170 namespaces owned by one replica) is
// sent coarsened by the informer, the client filtering the rest.
//
// Reads: List of a sharded kind returns this replica's share. Get of a key that is not
// in the store returns NotFound (apierrors.IsNotFound; client.IgnoreNotFound takes it)
// where the replica would hold the object if it existed, and an error wrapping
// ErrNotInShard where it cannot know:
//   - by namespace, NotFound when the informer holds the key's namespace (the replica
//     serves its slot, and the relist that brought the namespace in has been handed to the store),
//     or when the replica serves the slot of a namespace that does not exist (as of the
//     Namespace informer); ErrNotInShard for another replica's namespace, and for a
//     namespace this replica owns but does not hold yet: one created within
//     NamespaceDebounce, or whose relist is under way (the cache cannot tell an object
//     it has not received from an absent one). So a reconciler written the scaffolded
//     way forgets a deleted object of its share.
//   - by uid, NotFound only while the replica serves every slot (alone in its ring):
//     a key carries no uid, so the cache cannot tell "in another replica's share" from
//     "absent". Not even for an object it held and saw deleted: a new object of the same
//     name may have a uid of another share, which this replica never receives, so a
//     remembered deletion could claim NotFound for an object that exists. Wrap the
//     reconciler with ShardedReconciler (it skips requests of keys not held) or treat
//     ErrNotInShard as NotFound.
//
// ErrNotInShard does not satisfy apierrors.IsNotFound on purpose: code that creates an
// object when a Get says NotFound would create one that exists in another replica's
// share.
func WithSharding(s Sharding) Option {
	return func(c *Config) { c.Sharding = &s }
}

// compressionEnv is the environment variable that turns compression off
// (Config.DisableCompression) in every cache built while it is "off".
const compressionEnv = "DELTACACHE_COMPRESSION"

// storageEnv is the environment variable that sets Config.Storage of every cache
// built while it is "Compact" or "Decoded" and whose Config.Storage is StorageAuto:
// `DELTACACHE_STORAGE=Decoded go test ./...` runs a whole suite with compact storage
// off.
const storageEnv = "DELTACACHE_STORAGE"

// mutationDetectorEnv is the environment variable that turns the mutation detector
// on for every cache built while it is "true".
const mutationDetectorEnv = "DELTACACHE_MUTATION_DETECTOR"

// defaultMutationCheckPeriod is the detector's default full-comparison period.
const defaultMutationCheckPeriod = time.Second

// complete validates c and returns a copy with label keys de-duplicated (in order),
// the mutation detector turned on by DELTACACHE_MUTATION_DETECTOR=true, and the
// detector's period defaulted.
func (c Config) complete() (Config, error) {
	var errs []string
	keys := make([]string, 0, len(c.LabelIndexes))
	for _, key := range c.LabelIndexes {
		if problems := validation.IsQualifiedName(key); len(problems) > 0 {
			errs = append(errs, fmt.Sprintf("label index key %q is not a valid label key: %s",
				key, strings.Join(problems, "; ")))
			continue
		}
		if !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	if c.ListPageSize < 0 {
		errs = append(errs, fmt.Sprintf("list page size must not be negative, got %d", c.ListPageSize))
	}
	if c.MutationCheckPeriod < 0 {
		errs = append(errs, fmt.Sprintf("mutation check period must not be negative, got %s", c.MutationCheckPeriod))
	}
	if c.Storage == StorageAuto {
		switch v := os.Getenv(storageEnv); v {
		case "", "Auto":
		default:
			c.Storage = StorageMode(v)
		}
	}
	if !validStorageMode(c.Storage) {
		errs = append(errs, fmt.Sprintf("invalid storage mode %q (Compact, Decoded or empty for Auto; %s sets the default)",
			c.Storage, storageEnv))
	}
	if os.Getenv(compressionEnv) == "off" {
		c.DisableCompression = true
	}
	if os.Getenv(mutationDetectorEnv) == "true" {
		c.MutationDetector = true
	}
	if c.MutationCheckPeriod == 0 {
		c.MutationCheckPeriod = defaultMutationCheckPeriod
	}
	if c.RefusedNotReadyAfter == 0 {
		c.RefusedNotReadyAfter = DefaultRefusedNotReadyAfter
	}
	if c.MinWatchTimeout < 0 {
		errs = append(errs, fmt.Sprintf("min watch timeout must not be negative, got %s", c.MinWatchTimeout))
	}
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("deltacache: invalid cache config: %s", strings.Join(errs, ", "))
	}
	c.LabelIndexes = keys
	return c, nil
}

// validStorageMode reports whether m is one of the StorageModes.
func validStorageMode(m StorageMode) bool {
	return m == StorageAuto || m == StorageCompact || m == StorageDecoded
}

// WithSnapshots turns on snapshots in dir (see Config.SnapshotDir): each informer
// held in compact storage writes one file there (mode 0600; dir is created 0700), and
// starts from it when the cache starts again: a watch resumed from the snapshot's
// resourceVersion, or, when the server no longer has it, a metadata-only LIST compared
// with it, brings it to the server's current state before the informer syncs. A
// snapshot from another executable (see WithSnapshotVersion) or for other options is
// discarded with one log line. Secrets are not written (see WithSnapshotSecrets).
func WithSnapshots(dir string) Option {
	return func(c *Config) { c.SnapshotDir = dir }
}

// WithSnapshotInterval sets how often each synced informer writes its snapshot while
// the cache runs (see Config.SnapshotInterval): a process that dies without its write
// at stop (SIGKILL, OOM) starts from a snapshot at most this old.
func WithSnapshotInterval(d time.Duration) Option {
	return func(c *Config) { c.SnapshotInterval = d }
}

// WithSnapshotSecrets writes Secrets to snapshots too (see Config.SnapshotSecrets):
// their data then lands on disk, readable by whoever can read the directory's files.
func WithSnapshotSecrets() Option {
	return func(c *Config) { c.SnapshotSecrets = true }
}

// WithSnapshotVersion names the program's version in its snapshots instead of the hash
// of its executable, so that a new build resumes the snapshots of the previous one:
// set it only if you vouch that the transforms and the cache's options did not change
// how objects are stored (see Config.SnapshotVersion).
func WithSnapshotVersion(version string) Option {
	return func(c *Config) { c.SnapshotVersion = version }
}
