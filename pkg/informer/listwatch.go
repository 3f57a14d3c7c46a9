package informer

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

// ListWatchOptions are applied to every list and watch request.
type ListWatchOptions struct {
	Namespace     string // "" = all namespaces (or cluster-scoped)
	LabelSelector string // server-side, "" = everything
	FieldSelector string // server-side, "" = everything
	// AllowWatchBookmarks sets AllowWatchBookmarks on every watch request.
	// Without bookmarks the server never ends the initial events of a
	// WatchList stream, so false also opts the ListWatch out of WatchList.
	AllowWatchBookmarks bool
}

// ListFunc lists one page of objects with the given options.
type ListFunc func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)

// WatchFunc opens a watch with the given options.
type WatchFunc func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)

// ListWatch is a toolscache.ListerWatcher(WithContext) that applies
// ListWatchOptions to every request: its selectors replace the caller's, a
// watch gets Watch=true and the options' AllowWatchBookmarks; the namespace
// is the constructor's. Everything else is passed through, including the
// WatchList (KEP-3157) sendInitialEvents and resourceVersionMatch. It
// supports WatchList unless bookmarks are off or the wrapped client opts out
// (as client-go's fake dynamic and metadata clients do).
type ListWatch struct {
	list  ListFunc
	watch WatchFunc
	opts  ListWatchOptions
	// watchListUnsupported is IsWatchListSemanticsUnSupported's answer.
	watchListUnsupported bool
}

var (
	_ toolscache.ListerWatcher            = (*ListWatch)(nil)
	_ toolscache.ListerWatcherWithContext = (*ListWatch)(nil)
)

// NewListWatch builds a ListWatch from plain functions, which get opts'
// selectors (and Watch, AllowWatchBookmarks) applied but must apply
// opts.Namespace themselves. watchFn must pass SendInitialEvents and
// ResourceVersionMatch to the server (else the Reflector loses one
// WatchListTimeout, then lists). It supports WatchList iff
// opts.AllowWatchBookmarks.
func NewListWatch(list ListFunc, watchFn WatchFunc, opts ListWatchOptions) *ListWatch {
	return newListWatch(list, watchFn, opts, nil)
}

// newListWatch builds a ListWatch over client (nil for plain functions),
// inheriting the client's WatchList opt-out.
func newListWatch(list ListFunc, watchFn WatchFunc, opts ListWatchOptions, client any) *ListWatch {
	return &ListWatch{
		list:                 list,
		watch:                watchFn,
		opts:                 opts,
		watchListUnsupported: !opts.AllowWatchBookmarks || watchlist.DoesClientNotSupportWatchListSemantics(client),
	}
}

// NewRESTListWatch lists/watches a typed resource through a REST client (as
// controller-runtime's apiutil.RESTClientForGVK builds, protobuf-capable):
// resource is the plural name, paramCodec encodes metav1.ListOptions (e.g.
// runtime.NewParameterCodec(scheme)). Lists and watch events are typed.
func NewRESTListWatch(
	client rest.Interface, resource string, namespaced bool, paramCodec runtime.ParameterCodec, opts ListWatchOptions,
) *ListWatch {
	ns := opts.Namespace
	list := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return client.Get().
			Resource(resource).
			NamespaceIfScoped(ns, namespaced && ns != "").
			VersionedParams(&o, paramCodec).
			Do(ctx).
			Get()
	}
	watchFn := func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return client.Get().
			Resource(resource).
			NamespaceIfScoped(ns, namespaced && ns != "").
			VersionedParams(&o, paramCodec).
			Watch(ctx)
	}
	return newListWatch(list, watchFn, opts, client)
}

// NewDynamicListWatch uses the dynamic client; objects are
// *unstructured.Unstructured and lists *unstructured.UnstructuredList.
func NewDynamicListWatch(
	client dynamic.Interface, gvr schema.GroupVersionResource, namespaced bool, opts ListWatchOptions,
) *ListWatch {
	res := func() dynamic.ResourceInterface {
		if namespaced && opts.Namespace != "" {
			return client.Resource(gvr).Namespace(opts.Namespace)
		}
		return client.Resource(gvr)
	}
	list := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return res().List(ctx, o)
	}
	watchFn := func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return res().Watch(ctx, o)
	}
	return newListWatch(list, watchFn, opts, client)
}

// NewMetadataListWatch uses the metadata client: items are
// *metav1.PartialObjectMetadata with gvk stamped on every list item and watch
// event (bookmarks and WatchList initial events included), lists a
// *metav1.PartialObjectMetadataList of kind gvk.Kind+"List".
func NewMetadataListWatch(
	client metadata.Interface, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind,
	namespaced bool, opts ListWatchOptions,
) *ListWatch {
	res := func() metadata.ResourceInterface {
		if namespaced && opts.Namespace != "" {
			return client.Resource(gvr).Namespace(opts.Namespace)
		}
		return client.Resource(gvr)
	}
	list := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		list, err := res().List(ctx, o)
		if err != nil {
			return nil, err
		}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		for i := range list.Items {
			list.Items[i].SetGroupVersionKind(gvk)
		}
		return list, nil
	}
	watchFn := func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		w, err := res().Watch(ctx, o)
		if err != nil {
			return nil, err
		}
		return newGVKWatch(w, gvk), nil
	}
	return newListWatch(list, watchFn, opts, client)
}

// ListWithContext lists one page with the configured selectors applied.
func (lw *ListWatch) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	lw.apply(&options)
	return lw.list(ctx, options)
}

// WatchWithContext opens a watch with the configured selectors applied,
// Watch=true, and AllowWatchBookmarks as configured.
func (lw *ListWatch) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	lw.apply(&options)
	options.Watch = true
	options.AllowWatchBookmarks = lw.opts.AllowWatchBookmarks
	return lw.watch(ctx, options)
}

// List is ListWithContext with context.Background().
func (lw *ListWatch) List(options metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), options)
}

// Watch is WatchWithContext with context.Background().
func (lw *ListWatch) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), options)
}

// IsWatchListSemanticsUnSupported reports whether the initial list must not
// be streamed: bookmarks are off (the server would never end the initial
// events; client-go's util/watchlist opts out then too) or the wrapped
// client opts out. Our Reflector and client-go's util/watchlist read it.
func (lw *ListWatch) IsWatchListSemanticsUnSupported() bool { return lw.watchListUnsupported }

func (lw *ListWatch) apply(o *metav1.ListOptions) {
	o.LabelSelector = lw.opts.LabelSelector
	o.FieldSelector = lw.opts.FieldSelector
}
