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
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/cacheapi"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/informer/codec"
)

// Cache is deltacache's informer cache. It implements controller-runtime's cache.Cache
// (client.Reader plus Informers) and cacheapi.Informers, so that
// client.CacheOptions.EnableReadYourWritesConsistency can use it. Build it with New or
// NewWith; the zero value is not usable. All methods are safe for concurrent use.
type Cache struct {
	// startCalled is set by the first Start; a second returns errAlreadyStarted.
	startCalled atomic.Bool

	config         *rest.Config
	httpClient     *http.Client
	scheme         *runtime.Scheme
	mapper         meta.RESTMapper
	codecs         serializer.CodecFactory
	paramCodec     runtime.ParameterCodec
	dynamicClient  dynamic.Interface
	metadataClient metadata.Interface

	settings Config
	// storageFor is Config.StorageFor by GVK.
	storageFor                  map[schema.GroupVersionKind]StorageMode
	scopes                      *scopeResolver
	readerFailOnMissingInformer bool
	watchErrorHandler           toolscache.WatchErrorHandlerWithContext
	log                         logr.Logger

	informers *informerMap
	// missing are the kinds blocking GetInformer calls wait for (see awaitKind).
	missing missingKinds
	stats   listStatsRegistry
	// intern is the cache's string intern table; nil with DisableStringInterning.
	intern *interner
	// clock drives the informers' timers and the mutation detector; real time except
	// in tests.
	clock clock.WithTicker

	// received counts the response-body bytes read by httpClient (ReceivedBytes).
	received *atomic.Int64

	// adaptive builds label indexes for the keys Lists keep scanning for; nil with
	// DisableAdaptiveIndexes.
	adaptive *adaptiveIndexes

	// sharder is the replica's share of the sharded kinds; nil without WithSharding.
	sharder *sharder

	// foreign are the kinds Options.NewInformer builds informers for that are not
	// deltacache's, served by controller-runtime's cache; nil without NewInformer.
	foreign *foreignKinds

	// listWatcher builds the ListerWatcher of one scope, its REST client's decoder
	// wrapped by wire when not nil; newListWatch except in tests.
	listWatcher func(key entryKey, mapping *meta.RESTMapping, namespaced bool,
		opts informer.ListWatchOptions, wire *codec.WireCapture) (toolscache.ListerWatcher, error)
}

var (
	_ crcache.Cache        = (*Cache)(nil)
	_ cacheapi.Informers   = (*Cache)(nil)
	_ crcache.NewCacheFunc = New
)

// New builds a Cache with deltacache's default settings (no label indexes); it has the
// signature of controller-runtime's cache.NewCacheFunc, so it can be set as
// manager.Options.NewCache. New(cfg, opts) is NewWith()(cfg, opts).
func New(cfg *rest.Config, opts crcache.Options) (crcache.Cache, error) {
	return NewWith()(cfg, opts)
}

// NewWith returns a cache.NewCacheFunc that builds a Cache with deltacache's own
// settings (see Config) on top of controller-runtime's Options:
//
//	NewCache: cache.NewWith(cache.WithLabelIndexes("app"))
//
// The returned function defaults opts as controller-runtime's cache.New does: Scheme to
// client-go's scheme.Scheme, HTTPClient to rest.HTTPClientFor(cfg), Mapper to
// apiutil.NewDynamicRESTMapper. It honours every Options field, with
// controller-runtime's precedence ByObject → DefaultNamespaces[namespace] → Default*.
// With NewInformer set, a kind whose informer it builds as something other than
// deltacache's own (*informer.SharedIndexInformer, e.g. informer.NewInformer) runs that
// informer, cached by controller-runtime's informer cache with the same Options, and
// lacks deltacache's compact storage, label indexes, bounded handler queues and
// sharding (see foreignKinds); the other kinds are deltacache's. Errors: nil cfg, invalid Config (label keys, page size),
// ByObject types that are unknown to the Scheme or RESTMapper or have Namespaces set
// although cluster-scoped. The returned cache does nothing until Start.
func NewWith(options ...Option) crcache.NewCacheFunc {
	return func(cfg *rest.Config, opts crcache.Options) (crcache.Cache, error) {
		var settings Config
		for _, option := range options {
			option(&settings)
		}
		return newCache(cfg, opts, settings)
	}
}

func newCache(cfg *rest.Config, opts crcache.Options, settings Config) (*Cache, error) {
	if cfg == nil {
		return nil, errors.New("deltacache: rest.Config must not be nil")
	}
	settings, err := settings.complete()
	if err != nil {
		return nil, err
	}
	if settings.Logger.GetSink() == nil {
		settings.Logger = logf.Log.WithName("deltacache")
	}

	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if opts.HTTPClient == nil {
		if opts.HTTPClient, err = rest.HTTPClientFor(cfg); err != nil {
			return nil, fmt.Errorf("could not create HTTP client from config: %w", err)
		}
	}
	if opts.Scheme == nil {
		opts.Scheme = scheme.Scheme
	}
	if opts.Mapper == nil {
		if opts.Mapper, err = apiutil.NewDynamicRESTMapper(cfg, opts.HTTPClient); err != nil {
			return nil, fmt.Errorf("could not create RESTMapper from config: %w", err)
		}
	}
	scopes, err := newScopeResolver(opts)
	if err != nil {
		return nil, err
	}
	storageFor, err := resolveStorageFor(settings.StorageFor, opts.Scheme)
	if err != nil {
		return nil, err
	}

	// The cache's own clients count what they receive (the RESTMapper's do not).
	received := &atomic.Int64{}
	opts.HTTPClient = countingClient(opts.HTTPClient, received)

	// The dynamic and metadata clients bring their own serializers.
	plain := rest.CopyConfig(cfg)
	plain.NegotiatedSerializer = nil
	dynamicClient, err := dynamic.NewForConfigAndClient(plain, opts.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("could not create dynamic client: %w", err)
	}
	metadataClient, err := metadata.NewForConfigAndClient(plain, opts.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("could not create metadata client: %w", err)
	}

	c := &Cache{
		config:                      cfg,
		httpClient:                  opts.HTTPClient,
		scheme:                      opts.Scheme,
		mapper:                      opts.Mapper,
		codecs:                      serializer.NewCodecFactory(opts.Scheme),
		paramCodec:                  runtime.NewParameterCodec(opts.Scheme),
		dynamicClient:               dynamicClient,
		metadataClient:              metadataClient,
		settings:                    settings,
		scopes:                      scopes,
		storageFor:                  storageFor,
		readerFailOnMissingInformer: opts.ReaderFailOnMissingInformer,
		watchErrorHandler:           opts.DefaultWatchErrorHandler,
		log:                         settings.Logger,
		informers:                   newInformerMap(settings.Logger),
		clock:                       clock.RealClock{},
		received:                    received,
	}
	if !settings.DisableStringInterning {
		c.intern = newInterner()
	}
	c.listWatcher = c.newListWatch
	if !settings.DisableAdaptiveIndexes {
		c.adaptive = newAdaptiveIndexes(settings.Logger, c.intern)
	}
	if settings.Sharding != nil {
		if c.sharder, err = newSharder(c, settings.Sharding, cfg, opts.Scheme); err != nil {
			return nil, err
		}
		c.informers.beforeRun = c.awaitFirstShardRound
	}
	if c.foreign, err = newForeignKinds(cfg, opts); err != nil {
		return nil, err
	}
	return c, nil
}

// GetInformer returns the informer of obj's GVK and Go type (typed,
// *unstructured.Unstructured or *metav1.PartialObjectMetadata, whose GVK must be set),
// creating it if needed; it is started at once if the cache has started. Its handlers
// receive objects of that Go type. The informer is an *informer.SharedIndexInformer, or,
// when the kind is cached in several namespaces, an informer fanning out to one per
// namespace.
//
// Unless BlockUntilSynced(false) is given, GetInformer waits, once the cache has
// started, until the informer has synced; it returns a Timeout error if ctx ends first
// and, promptly, the informer's list/watch error if it is one retrying cannot fix (see
// Config.WaitThroughSyncErrors). Before Start it never waits. Errors also when the GVK
// cannot be determined or has no REST mapping (*meta.NoKindMatchError) — except that a
// blocking call on a started cache waits for a kind that is not served yet (a controller
// started before its CRD was installed): it asks the RESTMapper again every 500 ms and
// returns the informer, synced, once the CRD is established, or the NoKindMatch error
// when ctx ends. While it waits, WaitForCacheSync waits too and the readyz check fails
// naming the kind. Get and List never wait for a kind: they return NoKindMatch at once.
func (c *Cache) GetInformer(
	ctx context.Context, obj client.Object, opts ...crcache.InformerGetOption,
) (crcache.Informer, error) {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return nil, err
	}
	if c.isForeign(entryKey{gvk: gvk, shape: shapeOf(obj)}, obj) {
		return c.foreign.cache.GetInformer(ctx, obj, opts...)
	}
	e, _, err := c.getEntry(ctx, entryKey{gvk: gvk, shape: shapeOf(obj)}, obj, false, blockUntilSynced(opts))
	if err != nil {
		return nil, err
	}
	return e.informer, nil
}

// GetInformerForKind is GetInformer for a GVK: a typed informer if the Scheme knows the
// kind, an *unstructured.Unstructured one otherwise (controller-runtime errors for kinds
// missing from the Scheme).
func (c *Cache) GetInformerForKind(
	ctx context.Context, gvk schema.GroupVersionKind, opts ...crcache.InformerGetOption,
) (crcache.Informer, error) {
	var obj runtime.Object
	if c.scheme.Recognizes(gvk) {
		typed, err := c.scheme.New(gvk)
		if err != nil {
			return nil, err
		}
		obj = typed
	} else {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		obj = u
	}
	if co, ok := obj.(client.Object); ok && c.isForeign(entryKey{gvk: gvk, shape: shapeOf(obj)}, obj) {
		return c.foreign.cache.GetInformer(ctx, co, opts...)
	}
	e, _, err := c.getEntry(ctx, entryKey{gvk: gvk, shape: shapeOf(obj)}, obj, false, blockUntilSynced(opts))
	if err != nil {
		return nil, err
	}
	return e.informer, nil
}

// RemoveInformer stops the informer of obj's GVK and Go type and forgets it; it is a
// no-op if there is none. Handlers registered on it receive no further events; the next
// read or GetInformer of that kind creates a fresh informer (without the indexes added
// to the old one). Errors only when obj's GVK cannot be determined.
func (c *Cache) RemoveInformer(ctx context.Context, obj client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return err
	}
	key := entryKey{gvk: gvk, shape: shapeOf(obj)}
	if c.isForeign(key, obj) {
		c.forgetForeign(key)
		return c.foreign.cache.RemoveInformer(ctx, obj)
	}
	if c.informers.remove(key) {
		c.log.V(1).Info("informer removed", "informer", key.String())
	}
	return nil
}

// Start runs every informer created so far, and every informer created later as soon
// as it is created. It blocks until ctx ends, then waits for the informers to stop and
// returns nil. A second call returns an error.
func (c *Cache) Start(ctx context.Context) error {
	if !c.startCalled.CompareAndSwap(false, true) {
		return errAlreadyStarted
	}
	if c.foreign != nil && c.foreign.started.CompareAndSwap(false, true) {
		done := make(chan error, 1)
		go func() { done <- c.foreign.cache.Start(ctx) }()
		defer func() {
			if err := <-done; err != nil {
				c.log.Error(err, "controller-runtime's cache of the kinds of Options.NewInformer")
			}
		}()
	}
	if c.adaptive.claim() { // the first Start only
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.adaptive.run(ctx)
		}()
		defer func() { <-done }()
	}
	if c.sharder == nil {
		return c.informers.Start(ctx)
	}
	if c.sharder.namespaces != nil {
		nsCtx, stopNamespaces := context.WithCancel(ctx)
		nsDone := make(chan struct{})
		go func() {
			defer close(nsDone)
			c.runNamespaces(nsCtx)
		}()
		defer func() { stopNamespaces(); <-nsDone }()
	}
	ringDone := make(chan error, 1)
	c.sharder.startCtx = ctx // read by serveSlots, which the ring calls from Run
	go func() { ringDone <- c.sharder.ring.Run(ctx) }()
	err := c.informers.Start(ctx)
	return errors.Join(err, <-ringDone)
}

// WaitForCacheSync waits until Start has been called, then until every informer that
// exists at the time of the call has synced, and returns true. It returns false if ctx
// ends first, and also, unlike controller-runtime's (which waits for ctx whatever
// happens), as soon as every informer that has not synced fails with an error that
// retrying will not fix — Forbidden, Unauthorized, a resource that is not served —
// after logging those errors once; SyncError and SyncErrors return them. An informer
// failing with a transient error (timeouts, 5xx, 429) is waited for.
//
// The Manager calls WaitForCacheSync with its own context (no deadline) as the
// readiness check of its caches, and controllers' sources call it before waiting
// for their handlers; with deltacache a cache that cannot sync for lack of RBAC
// makes them fail ("cache did not sync") instead of hanging until CacheSyncTimeout or
// forever. Config.WaitThroughSyncErrors (WithWaitThroughSyncErrors) restores
// controller-runtime's behaviour. It also waits while a blocking GetInformer waits for
// a kind that is not served yet (see GetInformer), and logs the kinds once.
func (c *Cache) WaitForCacheSync(ctx context.Context) bool {
	synced := c.waitForMissingKinds(ctx, func() bool {
		return c.informers.WaitForCacheSync(ctx, c.settings.WaitThroughSyncErrors)
	})
	if !synced && ctx.Err() != nil {
		c.logNotSynced()
	}
	if synced && c.foreign != nil {
		synced = c.foreign.cache.WaitForCacheSync(ctx)
	}
	return synced
}

// NeedLeaderElection returns false: the cache runs on every replica, as
// controller-runtime's does.
func (c *Cache) NeedLeaderElection() bool {
	return false
}

// getEntry returns the informer entry of key, creating it (unless failOnMissing, which
// returns ErrResourceNotCached instead) and, when block and the cache has started,
// waiting for every scope of it to sync (reads pass block false and wait, with
// waitForScopes, for the scopes they read). started reports whether the cache has started; callers that
// read return ErrCacheNotStarted when it is false, after the entry was created (as in
// controller-runtime, so that Start runs it).
func (c *Cache) getEntry(
	ctx context.Context, key entryKey, obj runtime.Object, failOnMissing, block bool,
) (e *entry, started bool, err error) {
	e, started, ok := c.informers.peek(key)
	if !ok {
		if failOnMissing {
			return nil, started, &crcache.ErrResourceNotCached{GVK: key.gvk}
		}
		built, err := c.newEntry(key)
		if err != nil && block && started && meta.IsNoMatchError(err) {
			var release func()
			built, release, err = c.awaitKind(ctx, key, err)
			defer release()
		}
		if err != nil {
			return nil, started, err
		}
		var added bool
		e, started, added = c.informers.add(built)
		if added {
			c.log.V(1).Info("informer created", "informer", key.String(), "scopes", len(e.scopes), "started", started)
			if err := c.followShard(ctx, e); err != nil {
				return nil, started, err
			}
		}
	}
	if block && started {
		if err := waitForScopes(ctx, e.key, e.scopes, obj, c.settings.WaitThroughSyncErrors); err != nil {
			return nil, started, err
		}
	}
	return e, started, nil
}

// blockUntilSynced applies InformerGetOptions; the default is to block.
func blockUntilSynced(opts []crcache.InformerGetOption) bool {
	var o crcache.InformerGetOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o.BlockUntilSynced == nil || *o.BlockUntilSynced
}
