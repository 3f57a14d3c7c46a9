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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
)

// storeTransform returns the transform of one informer scope. pkg/informer runs it
// exactly once on every object the informer receives (listed or watched), before the
// object is queued and stored; never on tombstones or resyncs. In order it:
//
//  1. gives the object the TypeMeta controller-runtime's informers give it (see
//     carriesGVK): gvk on unstructured and metadata-only objects, and on typed ones
//     with Config.TypeMetaOnHandlerObjects; an empty TypeMeta on typed ones otherwise,
//     as client-go's typed decoding leaves them;
//  2. runs the user's transform, if any (ByObject.Transform, else
//     DefaultNamespaces[namespace].Transform, else DefaultTransform), once;
//  3. sets gvk again if the user's transform returned an object that carries one
//     without it (a typed result is otherwise stored as returned, TypeMeta included);
//  4. strips metadata.managedFields, unless Config.KeepManagedFields;
//  5. interns repeated metadata strings (see interner), unless
//     Config.DisableStringInterning or the informer's store is compact (its objects
//     are held as bytes: shared strings would save nothing);
//  6. records the object in detector, if the mutation detector is on.
//
// Steps 4–6 run after the user's transform so that they apply to the object that is
// stored, whatever the transform returned; they skip results that have no object
// metadata. The object stored is the one index functions, event handlers and
// GetStore/GetIndexer see; Get and List set gvk on the copies they return.
func (c *Cache) storeTransform(
	gvk schema.GroupVersionKind, user toolscache.TransformFunc, detector *mutationDetector, compact bool,
) toolscache.TransformFunc {
	stripManagedFields := !c.settings.KeepManagedFields
	typedGVK := c.settings.TypeMetaOnHandlerObjects
	intern := c.intern
	if compact {
		intern = nil
	}
	return func(in any) (any, error) {
		obj, _ := in.(runtime.Object)
		if obj != nil {
			if carriesGVK(obj, typedGVK) {
				obj.GetObjectKind().SetGroupVersionKind(gvk)
			} else {
				obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			}
		}
		out := in
		if user != nil {
			var err error
			if out, err = user(in); err != nil {
				return nil, err
			}
			obj, _ = out.(runtime.Object)
			if obj != nil && carriesGVK(obj, typedGVK) && obj.GetObjectKind().GroupVersionKind().Empty() {
				obj.GetObjectKind().SetGroupVersionKind(gvk)
			}
		}
		m, ok := out.(metav1.Object)
		if !ok {
			return out, nil
		}
		if stripManagedFields {
			m.SetManagedFields(nil)
		}
		if intern != nil {
			intern.internObject(m)
		}
		if detector != nil && obj != nil {
			detector.record(toolscache.MetaObjectToName(m).String(), obj)
		}
		return out, nil
	}
}

// carriesGVK reports whether a stored obj carries its GroupVersionKind. In
// controller-runtime's cache, unstructured objects carry it (the API server's JSON has
// apiVersion and kind) and metadata-only ones too (its metadata informer sets it on
// every listed and watched object), while typed objects have an empty TypeMeta: the
// typed clients' decoder clears it, and controller-runtime sets it only on the copies
// Get and List return. deltacache does the same unless typedGVK
// (Config.TypeMetaOnHandlerObjects).
func carriesGVK(obj runtime.Object, typedGVK bool) bool {
	switch obj.(type) {
	case *unstructured.Unstructured, *metav1.PartialObjectMetadata:
		return true
	default:
		return typedGVK
	}
}
