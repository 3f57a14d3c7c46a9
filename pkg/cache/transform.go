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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
)

// storeTransform returns the transform of one informer scope. pkg/informer runs it
// exactly once on every object the informer receives (listed or watched), before the
// object is queued and stored; never on tombstones or resyncs. In order it:
//
//  1. sets gvk on the object, so that the user's transform sees the kind (typed list
//     items decoded from the API server have no TypeMeta);
//  2. runs the user's transform, if any (ByObject.Transform, else
//     DefaultNamespaces[namespace].Transform, else DefaultTransform), once;
//  3. sets gvk again if the user's transform returned an object without one;
//  4. strips metadata.managedFields, unless Config.KeepManagedFields;
//  5. interns repeated metadata strings (see internTable), unless
//     Config.DisableStringInterning or the informer's store is compact (its objects
//     are held as bytes: shared strings would save nothing);
//  6. records the object in detector, if the mutation detector is on.
//
// Steps 4–6 run after the user's transform so that they apply to the object that is
// stored, whatever the transform returned; they skip results that have no object
// metadata. Objects in the store, and so every object handed to handlers and
// readers, carry their GVK.
func (c *Cache) storeTransform(
	gvk schema.GroupVersionKind, user toolscache.TransformFunc, detector *mutationDetector, compact bool,
) toolscache.TransformFunc {
	stripManagedFields := !c.settings.KeepManagedFields
	intern := c.intern
	if compact {
		intern = nil
	}
	return func(in any) (any, error) {
		obj, _ := in.(runtime.Object)
		if obj != nil {
			obj.GetObjectKind().SetGroupVersionKind(gvk)
		}
		out := in
		if user != nil {
			var err error
			if out, err = user(in); err != nil {
				return nil, err
			}
			obj, _ = out.(runtime.Object)
			if obj != nil && obj.GetObjectKind().GroupVersionKind().Empty() {
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
