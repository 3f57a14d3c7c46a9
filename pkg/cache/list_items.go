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
	"sync"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// listItem is one object a List returns: the cached object, and whether the caller
// gets a deep copy of it (else the object's fields are shared with the cache).
type listItem struct {
	obj  runtime.Object
	copy bool
	// own: obj is already the caller's (decoded from compact storage); copy means
	// only that its GVK is set, as on a copy.
	own bool
}

// setListItems replaces the items of list with items, in order, setting gvk on every
// deep copy. A list whose Items is a slice of structs T holding *T objects — every
// generated list type, UnstructuredList, PartialObjectMetadataList — gets each deep
// copy written straight into its slot with T's DeepCopyInto, instead of a copy made
// with DeepCopyObject and then copied into the slot by apimeta.SetList: one
// allocation and one struct copy less per item, which is most of a List's cost once
// an index has found the items. Other lists go through apimeta.SetList.
func setListItems(list runtime.Object, items []listItem, gvk schema.GroupVersionKind) error {
	itemsPtr, err := apimeta.GetItemsPtr(list)
	if err != nil {
		return err
	}
	slot := reflect.ValueOf(itemsPtr).Elem()
	if copyInto, ok := deepCopyIntoOf(slot.Type(), items); ok {
		slice := reflect.MakeSlice(slot.Type(), len(items), len(items))
		args := make([]reflect.Value, 2)
		for i, item := range items {
			dst := slice.Index(i).Addr()
			if !item.copy || item.own {
				dst.Elem().Set(reflect.ValueOf(item.obj).Elem())
				if item.copy {
					dst.Interface().(runtime.Object).GetObjectKind().SetGroupVersionKind(gvk)
				}
				continue
			}
			args[0], args[1] = reflect.ValueOf(item.obj), dst
			copyInto.Call(args)
			dst.Interface().(runtime.Object).GetObjectKind().SetGroupVersionKind(gvk)
		}
		slot.Set(slice)
		return nil
	}
	objs := make([]runtime.Object, len(items))
	for i, item := range items {
		objs[i] = item.obj
		if item.copy {
			if !item.own {
				objs[i] = item.obj.DeepCopyObject()
			}
			objs[i].GetObjectKind().SetGroupVersionKind(gvk)
		}
	}
	return apimeta.SetList(list, objs)
}

// deepCopyIntos caches, per pointer type *T, T's DeepCopyInto method (func(*T, *T)),
// or the zero Value when *T has none.
var deepCopyIntos sync.Map // reflect.Type → reflect.Value

// deepCopyIntoOf returns the DeepCopyInto method of the element type of sliceType
// when the slice holds structs T and every item is a *T.
func deepCopyIntoOf(sliceType reflect.Type, items []listItem) (reflect.Value, bool) {
	elem := sliceType.Elem()
	if elem.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	ptr := reflect.PointerTo(elem)
	for _, item := range items {
		if reflect.TypeOf(item.obj) != ptr {
			return reflect.Value{}, false
		}
	}
	if cached, ok := deepCopyIntos.Load(ptr); ok {
		fn := cached.(reflect.Value)
		return fn, fn.IsValid()
	}
	var fn reflect.Value
	if m, ok := ptr.MethodByName("DeepCopyInto"); ok &&
		m.Type.NumIn() == 2 && m.Type.In(1) == ptr && m.Type.NumOut() == 0 {
		fn = m.Func
	}
	deepCopyIntos.Store(ptr, fn)
	return fn, fn.IsValid()
}
