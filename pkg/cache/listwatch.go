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

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/informer/codec"
)

// listWatchOptions returns the ListWatchOptions of a scope: its namespace, its
// server-side selectors, and bookmarks when the scope enables them.
func listWatchOptions(scope watchScope) informer.ListWatchOptions {
	opts := informer.ListWatchOptions{
		Namespace:           scope.namespace,
		AllowWatchBookmarks: scope.enableWatchBookmarks,
	}
	if scope.label != nil {
		opts.LabelSelector = scope.label.String()
	}
	if scope.field != nil {
		opts.FieldSelector = scope.field.String()
	}
	return opts
}

// newListWatch builds the ListerWatcher of one scope: typed objects through a REST
// client from apiutil.RESTClientForGVK (protobuf for built-in types), unstructured
// objects through the dynamic client, metadata through the metadata client. A typed
// scope with a wire capture gets the same REST client with its decoder wrapped by
// wire (wireRESTClient).
func (c *Cache) newListWatch(
	key entryKey, mapping *meta.RESTMapping, namespaced bool, opts informer.ListWatchOptions,
	wire *codec.WireCapture,
) (toolscache.ListerWatcher, error) {
	switch key.shape {
	case shapeUnstructured:
		return informer.NewDynamicListWatch(c.dynamicClient, mapping.Resource, namespaced, opts), nil
	case shapeMetadata:
		return informer.NewMetadataListWatch(c.metadataClient, mapping.Resource, key.gvk, namespaced, opts), nil
	default:
		var client rest.Interface
		var err error
		if wire != nil {
			client, err = c.wireRESTClient(key.gvk, wire)
		} else {
			client, err = apiutil.RESTClientForGVK(key.gvk, false, false, c.config, c.codecs, c.httpClient)
		}
		if err != nil {
			return nil, fmt.Errorf("building REST client for %s: %w", key.gvk, err)
		}
		return informer.NewRESTListWatch(client, mapping.Resource.Resource, namespaced, c.paramCodec, opts), nil
	}
}

// wireRESTClient is the REST client apiutil.RESTClientForGVK builds for a built-in
// kind (its config: the group version, API path, user agent and protobuf), with the
// decoder of its responses and watch events wrapped by wire, which keeps the bytes
// each object came in for the storage codec (codec.WireCapture). It leaves out
// controller-runtime's target-zeroing decoder: pkg/informer's REST ListerWatcher
// decodes every response and event into a new object.
func (c *Cache) wireRESTClient(gvk schema.GroupVersionKind, wire *codec.WireCapture) (rest.Interface, error) {
	gv := gvk.GroupVersion()
	cfg := rest.CopyConfig(c.config)
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	if gvk.Group == "" {
		cfg.APIPath = "/api"
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if cfg.ContentType == "" {
		cfg.ContentType = runtime.ContentTypeProtobuf
	}
	cfg.NegotiatedSerializer = wire.NegotiatedSerializer(serializer.WithoutConversionCodecFactory{CodecFactory: c.codecs})
	return rest.RESTClientForConfigAndClient(cfg, c.httpClient)
}

// wireCapture returns the capture of a typed scope's REST client for its storage
// codec sc, or nil where the codec must marshal what it stores: a codec other than
// protobuf (compressed or not), a kind client-go's scheme does not register (for
// which apiutil.RESTClientForGVK would not ask for protobuf), a user transform (it
// may change the object the wire's bytes encode), or a config that asks for
// another content type than protobuf. The capture cuts metadata.managedFields out
// of the stored bytes as storeTransform cuts them out of the object, unless
// KeepManagedFields.
func (c *Cache) wireCapture(key entryKey, sc informer.StorageCodec, scope watchScope) *codec.WireCapture {
	if key.shape != shapeTyped || scope.transform != nil || !clientgoscheme.Scheme.Recognizes(key.gvk) ||
		(c.config.ContentType != "" && c.config.ContentType != runtime.ContentTypeProtobuf) {
		return nil
	}
	if cc, ok := sc.(*codec.Compressed); ok {
		sc = cc.Inner()
	}
	pc, ok := sc.(*codec.Protobuf)
	if !ok {
		return nil
	}
	return pc.CaptureWire(!c.settings.KeepManagedFields)
}
