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
	"reflect"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// listSlots lets a List decode its items straight into the Items of the caller's
// typed list (informer.Selection.Into) when it knows beforehand how many it returns:
// a label selector that one label index answers whole, on compact stores. Each item
// then costs no allocation of its own and no copy into the slice, which is most of
// what setListItems otherwise spends on an item, and a fifth of a Pod's decode.
type listSlots struct {
	// items is the []T that becomes list's Items (dst); its elements are the slots.
	items, dst reflect.Value
	// given counts the calls of next, slots or not.
	given int
}

// newListSlots returns slots for up to bound items of list, or nil when list's Items
// is not a slice of example's type T (example being a *T) or bound is not positive.
func newListSlots(list runtime.Object, example runtime.Object, bound int) *listSlots {
	if bound <= 0 {
		return nil
	}
	itemsPtr, err := apimeta.GetItemsPtr(list)
	if err != nil {
		return nil
	}
	sliceType := reflect.TypeOf(itemsPtr).Elem()
	ptr := reflect.TypeOf(example)
	if sliceType.Kind() != reflect.Slice || ptr.Kind() != reflect.Pointer || sliceType.Elem() != ptr.Elem() {
		return nil
	}
	return &listSlots{items: reflect.MakeSlice(sliceType, bound, bound), dst: reflect.ValueOf(itemsPtr).Elem()}
}

// next returns where the next item goes: the next slot, or, past the bound (a write
// added candidates after the count), a new value of its own.
func (ls *listSlots) next() any {
	i := ls.given
	ls.given++
	if i < ls.items.Len() {
		return ls.items.Index(i).Addr().Interface()
	}
	return reflect.New(ls.items.Type().Elem()).Interface()
}

// set makes the filled slots the list's Items, with gvk set on each, when items are
// exactly the first len(items) slots in order; otherwise it reports false and leaves
// list alone (setListItems then copies the items out of the slots).
func (ls *listSlots) set(items []listItem, gvk schema.GroupVersionKind) bool {
	if len(items) > ls.items.Len() {
		return false
	}
	for i, item := range items {
		if reflect.ValueOf(item.obj).UnsafePointer() != ls.items.Index(i).Addr().UnsafePointer() {
			return false
		}
	}
	for _, item := range items {
		item.obj.GetObjectKind().SetGroupVersionKind(gvk)
	}
	ls.dst.Set(ls.items.Slice3(0, len(items), len(items)))
	return true
}

// slotsFor returns the slots of a List of list planned as plan over scopes, or nil
// when its items cannot be counted beforehand: only a label index that answers the
// whole selector (every candidate is kept), on stores whose reads return objects of
// their own (compact) and no mutation detector. The bound is the number of objects
// filed under the lookup's values, at most limit when positive.
func slotsFor(list, example runtime.Object, plan *listPlan, scopes []*scopedInformer, namespace string, limit int64) *listSlots {
	if plan.path != pathLabelIndex || !plan.labelsAnswered {
		return nil
	}
	lookup := plan.labels[0]
	name := LabelIndexName(lookup.key)
	bound := 0
	for _, s := range scopes {
		if !s.readsCopy || s.detector != nil {
			return nil
		}
		for _, value := range lookup.values {
			bound += s.indexer.IndexCount(name, KeyToNamespacedKey(namespace, value))
		}
	}
	if limit > 0 && int64(bound) > limit {
		bound = int(limit)
	}
	return newListSlots(list, example, bound)
}
