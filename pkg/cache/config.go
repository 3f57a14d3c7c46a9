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
)

// Config holds deltacache's own settings, the ones controller-runtime's cache.Options has
// no field for. The zero value is valid and gives controller-runtime's behaviour plus
// deltacache's defaults, as documented per field. Build it with Options passed to NewWith.
type Config struct {
	// LabelIndexes are label keys indexed for every kind as index "label:<key>", with
	// values "<namespace>/<labelvalue>" and "__all_namespaces/<labelvalue>" (cluster-scoped
	// objects only get the latter). A List whose label selector has an "=", "==" or "in"
	// requirement on one of these keys is answered from the index.
	// Zero value: no label indexes; label selectors are evaluated by scanning the
	// namespace index or every object, as controller-runtime does.
	LabelIndexes []string

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
	// table per Cache; see internTable), so thousands of pods of one Deployment share
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
	if os.Getenv(mutationDetectorEnv) == "true" {
		c.MutationDetector = true
	}
	if c.MutationCheckPeriod == 0 {
		c.MutationCheckPeriod = defaultMutationCheckPeriod
	}
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("deltacache: invalid cache config: %s", strings.Join(errs, ", "))
	}
	c.LabelIndexes = keys
	return c, nil
}
