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
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/informer/codec"
)

// shape is the Go type an informer lists, watches, stores and hands out.
type shape uint8

const (
	// shapeTyped: the Go type registered in the Scheme for the GVK (REST client).
	shapeTyped shape = iota
	// shapeUnstructured: *unstructured.Unstructured (dynamic client).
	shapeUnstructured
	// shapeMetadata: *metav1.PartialObjectMetadata (metadata client).
	shapeMetadata
)

// String returns the shape's metric label value: informer.ShapeTyped,
// informer.ShapeUnstructured or informer.ShapeMetadata.
func (s shape) String() string {
	switch s {
	case shapeUnstructured:
		return informer.ShapeUnstructured
	case shapeMetadata:
		return informer.ShapeMetadata
	default:
		return informer.ShapeTyped
	}
}

// shapeOf returns the shape of obj, a single object or a list, by its Go type, as
// controller-runtime's informersByType does.
func shapeOf(obj runtime.Object) shape {
	switch obj.(type) {
	case runtime.Unstructured:
		return shapeUnstructured
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return shapeMetadata
	default:
		return shapeTyped
	}
}

// entryKey identifies an informer entry: one per (GVK, shape).
type entryKey struct {
	gvk   schema.GroupVersionKind
	shape shape
}

// String names the entry in logs and errors as "Kind.version.group", followed by the
// shape unless typed: "Pod.v1", "Deployment.v1.apps (metadata)".
func (k entryKey) String() string {
	name := k.gvk.Kind + "." + k.gvk.Version
	if k.gvk.Group != "" {
		name += "." + k.gvk.Group
	}
	if k.shape != shapeTyped {
		name += " (" + k.shape.String() + ")"
	}
	return name
}

// entry is the informer state of one (GVK, shape): one scoped informer per watch scope
// (usually one; one per namespace when namespaces are configured).
type entry struct {
	key        entryKey
	namespaced bool
	// restricted: namespaces were configured, see scopeSet.restricted.
	restricted bool
	scopes     []*scopedInformer
	// informer is what GetInformer returns: the scope's *informer.SharedIndexInformer when
	// there is one scope, a multiNamespaceInformer over all scopes otherwise.
	informer crcache.Informer
	// scoped names the indexes pkg/cache gave its informers (label_index.go).
	scoped scopedIndexes
}

// scopedInformer is one running (or runnable) informer of an entry.
type scopedInformer struct {
	scope    watchScope
	informer *informer.SharedIndexInformer
	// indexer is the informer's live store, fetched once, as our Indexer type: reads
	// call it directly (GetInto, ByIndex) without an assertion or an interface.
	indexer *informer.Indexer
	// readsCopy: the store is compact, every read of it returns an object of its own
	// (no deep copy needed).
	readsCopy bool
	// storedType is the Go type of the stored objects (a pointer type).
	storedType reflect.Type
	// detector is the mutation detector of this informer's objects; nil when off.
	detector *mutationDetector
	// wire keeps the bytes the REST client decoded objects from, which the storage
	// codec stores instead of marshalling them (codec.WireCapture); nil without.
	wire *codec.WireCapture

	// cancel stops the informer; nil until it is started. Guarded by informerMap.mu.
	cancel context.CancelFunc
	// stopped is closed once the informer will never run (again): when RunWithContext
	// returned, or when it was removed or the cache stopped before it could start.
	stopped   chan struct{}
	closeOnce sync.Once
	// removed is set by RemoveInformer before it stops the informer.
	removed atomic.Bool
	// synced remembers that the informer has synced (HasSynced never turns
	// false again), so a read of a synced informer asks it no more.
	synced atomic.Bool
}

// hasSynced reports the informer's HasSynced, remembered once true.
func (s *scopedInformer) hasSynced() bool {
	if s.synced.Load() {
		return true
	}
	if s.informer.HasSynced() {
		s.synced.Store(true)
		return true
	}
	return false
}

func (s *scopedInformer) markStopped() {
	s.closeOnce.Do(func() { close(s.stopped) })
}

// scopeOf returns the scope that caches objects of namespace: the only one when
// namespaces are not restricted, else the namespace's own or the AllNamespaces one;
// nil when there is none.
func (e *entry) scopeOf(namespace string) *scopedInformer {
	if !e.restricted {
		return e.scopes[0]
	}
	var all *scopedInformer
	for _, s := range e.scopes {
		if s.scope.key == namespace {
			return s
		}
		if s.scope.key == metav1.NamespaceAll {
			all = s
		}
	}
	return all
}

// scopeForNamespace is scopeOf with an error wrapping errNamespaceNotCached when
// there is no scope for namespace.
func (e *entry) scopeForNamespace(namespace string) (*scopedInformer, error) {
	if s := e.scopeOf(namespace); s != nil {
		return s, nil
	}
	return nil, fmt.Errorf("namespace %q is %w", namespace, errNamespaceNotCached)
}

// scopesForList returns the scopes a List in namespace reads: all of them for "" (or a
// cluster-scoped kind), else the one caching namespace.
func (e *entry) scopesForList(namespace string) ([]*scopedInformer, error) {
	if namespace == "" || !e.restricted {
		return e.scopes, nil
	}
	s, err := e.scopeForNamespace(namespace)
	if err != nil {
		return nil, fmt.Errorf("unable to list: %v because of unknown namespace for the cache", namespace)
	}
	return []*scopedInformer{s}, nil
}

// informerMap tracks the entries and runs their informers: created lazily, started
// with the cache, started immediately when created after Start, stopped on removal
// or when Start's context ends. It follows controller-runtime's internal.Informers.
type informerMap struct {
	log logr.Logger

	mu      sync.RWMutex
	entries map[entryKey]*entry
	// started is true once Start ran; ctx is Start's context.
	started bool
	ctx     context.Context
	// stopped is true once Start's context ended; no informer starts after that.
	stopped bool
	// startWait is closed when Start has started the informers.
	startWait chan struct{}
	wg        sync.WaitGroup
	// beforeRun, when set (before Start), runs on an informer's goroutine before
	// the informer runs; false: the informer does not run (ctx ended).
	beforeRun func(ctx context.Context, e *entry) bool
}

func newInformerMap(log logr.Logger) *informerMap {
	return &informerMap{
		log:       log,
		entries:   make(map[entryKey]*entry),
		startWait: make(chan struct{}),
	}
}

// errAlreadyStarted is returned by a second Start.
var errAlreadyStarted = errors.New("deltacache: informer cache already started")

// Start runs every informer known now and every informer created later, then blocks
// until ctx ends, waits for the informers to return and returns nil. A second call
// returns an error at once.
func (m *informerMap) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return errAlreadyStarted
	}
	m.ctx = ctx
	for _, e := range m.entries {
		for _, s := range e.scopes {
			m.startLocked(e, s)
		}
	}
	m.started = true
	close(m.startWait)
	m.mu.Unlock()

	<-ctx.Done()

	m.mu.Lock()
	m.stopped = true
	m.mu.Unlock()
	m.wg.Wait()
	return nil
}

// startLocked runs s in a goroutine with a context derived from Start's. m.mu is held.
func (m *informerMap) startLocked(e *entry, s *scopedInformer) {
	if m.stopped {
		s.markStopped()
		return
	}
	ctx, cancel := context.WithCancel(m.ctx)
	s.cancel = cancel
	log := m.log.WithValues("informer", e.key.String())
	if s.scope.namespace != "" {
		log = log.WithValues("namespace", s.scope.namespace)
	}
	m.wg.Go(func() {
		defer s.markStopped()
		defer cancel()
		if m.beforeRun != nil && !m.beforeRun(ctx, e) {
			return
		}
		s.informer.RunWithContext(logr.NewContext(ctx, log))
	})
	if s.detector != nil {
		m.wg.Go(func() { s.detector.run(ctx, s.indexer) })
	}
}

// peek returns the entry of key, if any, and whether the cache has started.
func (m *informerMap) peek(key entryKey) (*entry, bool, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	e, ok := m.entries[key]
	return e, m.started, ok
}

// add stores e unless an entry for its key appeared meanwhile, and starts it if the
// cache has started. It returns the entry in the map, whether the cache has started
// and whether e was added.
func (m *informerMap) add(e *entry) (*entry, bool, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if existing, ok := m.entries[e.key]; ok {
		return existing, m.started, false
	}
	m.entries[e.key] = e
	if m.started {
		for _, s := range e.scopes {
			m.startLocked(e, s)
		}
	}
	return e, m.started, true
}

// remove stops the informers of key and forgets the entry; false if there was none. Handlers registered on
// them get no further events; a later read creates a fresh informer (without the
// indexes added with IndexField to the old one), as in controller-runtime.
func (m *informerMap) remove(key entryKey) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if !ok {
		return false
	}
	delete(m.entries, key)
	for _, s := range e.scopes {
		s.removed.Store(true)
		if s.cancel != nil {
			s.cancel()
		} else {
			s.markStopped()
		}
	}
	return true
}

// errNamespaceNotCached is wrapped by the error of a read in a namespace for which
// the kind has no scope (namespaces are configured and neither that namespace nor
// AllNamespaces is among them).
var errNamespaceNotCached = errors.New("not cached")

// readyScope is the lookup of a read of one object when nothing is left to do: the
// entry of key and its scope caching namespace (ignored for a cluster-scoped kind),
// and true, when the cache has started, the entry exists and that scope has synced.
// It returns false otherwise (no entry, not started, no scope for namespace, not
// synced), and the caller takes the path that creates, waits and reports errors
// (Cache.scopeForRead). It allocates nothing and takes one read lock.
func (m *informerMap) readyScope(key entryKey, namespace string) (*entry, *scopedInformer, bool) {
	e, started, ok := m.peek(key)
	if !ok || !started {
		return nil, nil, false
	}
	if !e.namespaced {
		namespace = ""
	}
	s := e.scopeOf(namespace)
	if s == nil || !s.hasSynced() {
		return nil, nil, false
	}
	return e, s, true
}

// readyScopes is readyScope for a List in namespace: the scopes it reads (as
// entry.scopesForList), when every one of them has synced.
func (m *informerMap) readyScopes(key entryKey, namespace string) (*entry, []*scopedInformer, bool) {
	e, started, ok := m.peek(key)
	if !ok || !started {
		return nil, nil, false
	}
	scopes := e.scopes
	if namespace != "" && e.restricted {
		s := e.scopeOf(namespace)
		if s == nil {
			return nil, nil, false
		}
		scopes = []*scopedInformer{s}
	}
	for _, s := range scopes {
		if !s.hasSynced() {
			return nil, nil, false
		}
	}
	return e, scopes, true
}

// snapshot returns the scoped informers of every entry existing now.
func (m *informerMap) snapshot() []*scopedInformer {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*scopedInformer
	for _, e := range m.entries {
		out = append(out, e.scopes...)
	}
	return out
}

// scopesOf returns the scoped informers of every entry of gvk (any shape).
func (m *informerMap) scopesOf(gvk schema.GroupVersionKind) []*scopedInformer {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*scopedInformer
	for _, s := range []shape{shapeTyped, shapeUnstructured, shapeMetadata} {
		if e, ok := m.entries[entryKey{gvk: gvk, shape: s}]; ok {
			out = append(out, e.scopes...)
		}
	}
	return out
}

// gvks returns the GVKs that have at least one entry.
func (m *informerMap) gvks() []schema.GroupVersionKind {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []schema.GroupVersionKind
	for key := range m.entries {
		if !slices.Contains(out, key.gvk) {
			out = append(out, key.gvk)
		}
	}
	return out
}

// syncErrorPollInterval is how often a blocking read checks the informer's LastError.
const syncErrorPollInterval = 50 * time.Millisecond

// waitForScopes blocks until every one of scopes (informers of the entry key) has
// synced. It returns
//   - a Timeout error (apierrors.IsTimeout) when ctx ends first, carrying the informer's
//     last list/watch error if it has one;
//   - the informer's last error, wrapped, as soon as it is one retrying cannot fix
//     (see isPermanentSyncError), unless waitThroughErrors; a NotFound list/watch (the
//     resource is not served, e.g. its CRD was deleted) becomes a *meta.NoKindMatchError
//     instead, so that client.IgnoreNotFound does not mistake it for a missing object;
//   - an error when the informer stops (removed, or the cache stopped) before syncing.
//
// obj only names the Go type in the Timeout error, as controller-runtime does.
//
// A read waits only for the scopes it reads, so that with several namespaces one that
// cannot be listed (say, for lack of RBAC there) does not fail reads of the others, as
// controller-runtime's multi-namespace cache keeps them apart.
func waitForScopes(
	ctx context.Context, key entryKey, scopes []*scopedInformer, obj runtime.Object, waitThroughErrors bool,
) error {
	for _, s := range scopes {
		if err := s.waitForSync(ctx, key, obj, waitThroughErrors); err != nil {
			return err
		}
	}
	return nil
}

func (s *scopedInformer) waitForSync(
	ctx context.Context, key entryKey, obj runtime.Object, waitThroughErrors bool,
) error {
	if s.informer.HasSynced() {
		return nil
	}
	synced := s.informer.HasSyncedChecker().Done()
	ticker := time.NewTicker(syncErrorPollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-synced:
			return nil
		case <-s.stopped:
			if s.informer.HasSynced() {
				return nil
			}
			return fmt.Errorf("informer for %s stopped before it synced (removed, or the cache stopped)", key)
		case <-ctx.Done():
			timeout := apierrors.NewTimeoutError(fmt.Sprintf("failed waiting for %T Informer to sync", obj), 0)
			if last := s.informer.LastError(); last != nil {
				return fmt.Errorf("%w; last list/watch error of the %s informer: %w", timeout, key, last)
			}
			return timeout
		case <-ticker.C:
			if waitThroughErrors {
				continue
			}
			if last := s.informer.LastError(); last != nil && isPermanentSyncError(last) {
				return permanentSyncError(key, last)
			}
		}
	}
}
