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
// A Manager uses it through manager.Options.NewCache:
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
//		NewCache: cache.NewWith(cache.WithLabelIndexes("app")),
//	})
//
// The cache owns one informer per (GroupVersionKind, shape), where the shape is the Go
// type the caller asked for: a typed object from the Scheme (listed and watched through
// a REST client, protobuf for built-in types), *unstructured.Unstructured (dynamic
// client) or *metav1.PartialObjectMetadata (metadata client). Informers come from
// deltacache's own pkg/informer (Reflector → DeltaFIFO → Indexer → SharedIndexInformer);
// they are created lazily on the first Get, List, GetInformer or IndexField of a kind,
// started with the cache, and can be removed with RemoveInformer.
//
// Reads follow controller-runtime's CacheReader: Get and List return deep copies unless
// UnsafeDisableDeepCopy is set, NotFound errors name the kind, MatchingFields needs an
// index registered with IndexField ("field:<name>", values "<ns>/<v>" and
// "__all_namespaces/<v>"). Beyond controller-runtime, label keys declared with
// WithLabelIndexes are indexed for every kind as "label:<key>", and a List whose label
// selector has an equality or set-membership requirement on such a key is answered from
// that index instead of a scan of the namespace or of every object; ListStats reports
// which path each List took.
//
// Every cache.Options field of controller-runtime v0.25 is honoured with controller-runtime's
// precedence (ByObject → DefaultNamespaces[namespace] → Default*), except NewInformer,
// which New rejects with an error: deltacache supplies its own informers.
package cache
