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
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// Contender names one cache configuration under test.
type Contender string

// The contenders. Every cache-level contender indexes spec.nodeName (IndexField, or an
// indexer for client-go); the label index differs as each one's users would set it up.
const (
	// Deltacache is pkg/cache.NewWith(WithLabelIndexes("app")): deltacache's defaults
	// plus the label index the workloads' label Lists use. In the in-process pipeline
	// workloads it is pkg/informer's SharedIndexInformer with the namespace and
	// label:app indexes.
	Deltacache Contender = "deltacache"
	// DeltacacheDefaults is pkg/cache.New with its defaults (no label index declared:
	// the first label Lists scan the namespace or every object, then the adaptive
	// label index the cache builds for the key answers them).
	DeltacacheDefaults Contender = "deltacache-defaults"
	// DeltacacheCompact is pkg/cache.NewWith(WithStorage(StorageCompact)): compact
	// storage also for the kinds StorageAuto holds decoded (typed CRD types), so that
	// section C shows what each choice costs. In section B3 it is pkg/informer's
	// SharedIndexInformer with pkg/cache's default storage for pods (protobuf,
	// compressed: codec.Compressed).
	DeltacacheCompact Contender = "deltacache-compact"
	// DeltacacheSnapshots is, in section B3 only, pkg/informer's SharedIndexInformer with
	// compact storage (as DeltacacheCompact there) writing a snapshot of its store every
	// PipelineSnapshotInterval: the pop loop's throughput while snapshots are written
	// back to back.
	DeltacacheSnapshots Contender = "deltacache-snapshots"
	// ControllerRuntime is controller-runtime's cache.New with its defaults.
	ControllerRuntime Contender = "controller-runtime"
	// ControllerRuntimeStrip is controller-runtime's cache.New with
	// DefaultTransform: cache.TransformStripManagedFields().
	ControllerRuntimeStrip Contender = "controller-runtime-strip"
	// ClientGo is client-go's toolscache.NewSharedIndexInformer for pods (protobuf, the
	// WatchList default of client-go) with the namespace, label:app and spec.nodeName
	// indexers; reads return the stored objects (no copy), as its listers do.
	ClientGo Contender = "client-go"
)

// PodReader is the read API the workloads time, answered by one contender.
type PodReader interface {
	// Get fetches the pod namespace/name.
	Get(ctx context.Context, namespace, name string) error
	// ListByLabel lists the pods with label app=app in namespace ("" = all) and returns
	// how many it found.
	ListByLabel(ctx context.Context, namespace, app string) (int, error)
	// ListByLabelShared is ListByLabel with UnsafeDisableDeepCopy: the list's items are
	// the cached pods' structs, their maps and slices shared with the cache (client-go's
	// ByIndex shares them always, so it is ListByLabel there).
	ListByLabelShared(ctx context.Context, namespace, app string) (int, error)
	// ListByNode lists the pods with spec.nodeName=node through a field index.
	ListByNode(ctx context.Context, node string) (int, error)
	// ListNamespace lists every pod of namespace.
	ListNamespace(ctx context.Context, namespace string) (int, error)
}

// CacheUnderTest is a contender's cache, built and ready to start.
type CacheUnderTest interface {
	PodReader
	// Start starts the cache and returns once it holds every pod (synced), or the
	// error that stops it, or ctx's error. The cache runs until ctx ends.
	Start(ctx context.Context) error
}

// NewCacheUnderTest builds contender's cache for pods against cfg. mapper may be nil
// (the caches discover the API); the in-memory API passes a static one. The informer for
// pods and its spec.nodeName index are created here, so Start times only the sync.
func NewCacheUnderTest(
	ctx context.Context, c Contender, cfg *rest.Config, mapper meta.RESTMapper,
) (CacheUnderTest, error) {
	opts := crcache.Options{Scheme: scheme.Scheme, Mapper: mapper}
	var newCache crcache.NewCacheFunc
	switch c {
	case Deltacache:
		newCache = dcache.NewWith(dcache.WithLabelIndexes(appLabel))
	case DeltacacheDefaults:
		newCache = dcache.New
	case ControllerRuntime:
		newCache = crcache.New
	case ControllerRuntimeStrip:
		opts.DefaultTransform = crcache.TransformStripManagedFields()
		newCache = crcache.New
	case ClientGo:
		return newClientGoCache(cfg)
	default:
		return nil, fmt.Errorf("unknown cache contender %q", c)
	}
	cache, err := newCache(cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := cache.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		return nil, err
	}
	return &crCache{cache: cache}, nil
}

// crCache drives a controller-runtime cache.Cache (controller-runtime's or deltacache's).
type crCache struct {
	cache crcache.Cache
}

func (c *crCache) Start(ctx context.Context) error {
	errs := make(chan error, 1)
	go func() { errs <- c.cache.Start(ctx) }()
	synced := make(chan bool, 1)
	go func() { synced <- c.cache.WaitForCacheSync(ctx) }()
	select {
	case err := <-errs:
		if err == nil {
			err = errors.New("cache stopped before it synced")
		}
		return err
	case ok := <-synced:
		if !ok {
			return fmt.Errorf("cache did not sync: %w", ctx.Err())
		}
		return nil
	}
}

func (c *crCache) Get(ctx context.Context, namespace, name string) error {
	return c.cache.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &corev1.Pod{})
}

func (c *crCache) ListByLabel(ctx context.Context, namespace, app string) (int, error) {
	return c.list(ctx, client.InNamespace(namespace), client.MatchingLabels{appLabel: app})
}

func (c *crCache) ListByLabelShared(ctx context.Context, namespace, app string) (int, error) {
	return c.list(ctx, client.InNamespace(namespace), client.MatchingLabels{appLabel: app}, client.UnsafeDisableDeepCopy)
}

func (c *crCache) ListByNode(ctx context.Context, node string) (int, error) {
	return c.list(ctx, client.MatchingFields{"spec.nodeName": node})
}

func (c *crCache) ListNamespace(ctx context.Context, namespace string) (int, error) {
	return c.list(ctx, client.InNamespace(namespace))
}

// list lists the pods that opts select and returns how many there are.
func (c *crCache) list(ctx context.Context, opts ...client.ListOption) (int, error) {
	var pods corev1.PodList
	err := c.cache.List(ctx, &pods, opts...)
	return len(pods.Items), err
}

// Index names of the client-go contender.
const (
	labelAppIndex = "label:app"
	nodeNameIndex = "spec.nodeName"
)

// PodIndexers returns the namespace and label:app indexers (label:app values
// "<namespace>/<app>" and "*/<app>", so one index answers both kinds of List).
func PodIndexers() toolscache.Indexers {
	return toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
		labelAppIndex: func(obj any) ([]string, error) {
			m, err := meta.Accessor(obj)
			if err != nil {
				return nil, err
			}
			app, ok := m.GetLabels()[appLabel]
			if !ok {
				return nil, nil
			}
			return []string{m.GetNamespace() + "/" + app, "*/" + app}, nil
		},
	}
}

// clientGoCache is client-go's SharedIndexInformer for pods.
type clientGoCache struct {
	informer toolscache.SharedIndexInformer
}

func newClientGoCache(cfg *rest.Config) (*clientGoCache, error) {
	cfg = rest.CopyConfig(cfg)
	// Protobuf, as Kubernetes' own controllers ask for and as both caches use for
	// built-in types; a clientset's default is JSON.
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	pods := cs.CoreV1().Pods(metav1.NamespaceAll)
	lw := toolscache.ToListWatcherWithWatchListSemantics(&toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return pods.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return pods.Watch(ctx, opts)
		},
	}, cs)
	indexers := PodIndexers()
	indexers[nodeNameIndex] = func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}
	return &clientGoCache{informer: toolscache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, indexers)}, nil
}

func (c *clientGoCache) Start(ctx context.Context) error {
	go c.informer.RunWithContext(ctx)
	select {
	case <-c.informer.HasSyncedChecker().Done():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("informer did not sync: %w", ctx.Err())
	}
}

func (c *clientGoCache) Get(_ context.Context, namespace, name string) error {
	_, exists, err := c.informer.GetIndexer().GetByKey(namespace + "/" + name)
	if err == nil && !exists {
		err = fmt.Errorf("pod %s/%s not found", namespace, name)
	}
	return err
}

func (c *clientGoCache) ListByLabel(_ context.Context, namespace, app string) (int, error) {
	if namespace == "" {
		namespace = "*"
	}
	items, err := c.informer.GetIndexer().ByIndex(labelAppIndex, namespace+"/"+app)
	return len(items), err
}

func (c *clientGoCache) ListByLabelShared(ctx context.Context, namespace, app string) (int, error) {
	return c.ListByLabel(ctx, namespace, app)
}

func (c *clientGoCache) ListByNode(_ context.Context, node string) (int, error) {
	items, err := c.informer.GetIndexer().ByIndex(nodeNameIndex, node)
	return len(items), err
}

func (c *clientGoCache) ListNamespace(_ context.Context, namespace string) (int, error) {
	items, err := c.informer.GetIndexer().ByIndex(toolscache.NamespaceIndex, namespace)
	return len(items), err
}
