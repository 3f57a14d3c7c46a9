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
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Interning bounds. A generation holds at most internGenerationSize strings; the
// table keeps two generations, so it never holds more than twice that many.
// Strings longer than internMaxLen are left alone: label values are at most 63
// bytes and label or annotation keys at most 317, so only odd strings are skipped.
const (
	internGenerationSize = 8192
	internMaxLen         = 320
)

// interner hands out one shared copy of each string it has seen recently, so that
// the decoded objects of a cache do not each hold their own copy of strings that
// thousands of them repeat (namespaces, label keys and values, annotation keys,
// owner kinds). It is bounded by two generations: lookups hit the current one, then
// the previous one (promoting the string into the current one); a miss adds the
// string to the current one, and a full current generation becomes the previous one
// (the older previous one is dropped). Strings in use stay shared across the swap as
// long as they are looked up again within a generation; strings that never repeat
// (a pod's own name in a label) cost one slot until they age out. Safe for
// concurrent use; one lock acquisition per object.
type interner struct {
	mu       sync.Mutex
	current  map[string]string
	previous map[string]string
}

func newInterner() *interner {
	return &interner{current: make(map[string]string, 256)}
}

// internLocked returns the shared copy of s. t.mu is held.
func (t *interner) internLocked(s string) string {
	if s == "" || len(s) > internMaxLen {
		return s
	}
	if shared, ok := t.sharedLocked(s); ok {
		return shared
	}
	t.addLocked(s)
	return s
}

// sharedLocked returns the table's copy of s, if it holds one (a string of the
// previous generation moves into the current one). s is only looked up, never kept.
// t.mu is held.
func (t *interner) sharedLocked(s string) (string, bool) {
	if shared, ok := t.current[s]; ok {
		return shared, true
	}
	if shared, ok := t.previous[s]; ok {
		t.addLocked(shared)
		return shared, true
	}
	return "", false
}

func (t *interner) addLocked(s string) {
	if len(t.current) >= internGenerationSize {
		t.previous = t.current
		t.current = make(map[string]string, internGenerationSize/4)
	}
	t.current[s] = s
}

// shared returns the table's shared copy of s, an index value. The label and field
// index functions call it for every object they index, and their values repeat (every
// pod of an app, every pod of a node): the records filed under one value then hold one
// string. A value the table does not hold yet is kept as a copy (s may be a view of
// bytes decoded from a stored record, which the table must not keep alive). t may be
// nil (interning off): s is returned.
func (t *interner) shared(s string) string {
	if t == nil || s == "" || len(s) > internMaxLen {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if shared, ok := t.sharedLocked(s); ok {
		return shared
	}
	s = strings.Clone(s)
	t.addLocked(s)
	return s
}

// size returns the number of strings held (both generations).
func (t *interner) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.current) + len(t.previous)
}

// internObject replaces the repeated metadata strings of obj by their shared copies:
// namespace, generateName, label keys and values, annotation keys (values are often
// large and unique), and the apiVersion, kind and name of owner references. Maps and
// the owner references are replaced by new ones (a map's keys cannot be replaced in
// place), so whatever obj shared them with is left alone.
func (t *interner) internObject(obj metav1.Object) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ns := obj.GetNamespace(); ns != "" {
		obj.SetNamespace(t.internLocked(ns))
	}
	if gn := obj.GetGenerateName(); gn != "" {
		obj.SetGenerateName(t.internLocked(gn))
	}
	if labels := obj.GetLabels(); len(labels) > 0 {
		interned := make(map[string]string, len(labels))
		for k, v := range labels {
			interned[t.internLocked(k)] = t.internLocked(v)
		}
		obj.SetLabels(interned)
	}
	if annotations := obj.GetAnnotations(); len(annotations) > 0 {
		interned := make(map[string]string, len(annotations))
		for k, v := range annotations {
			interned[t.internLocked(k)] = v
		}
		obj.SetAnnotations(interned)
	}
	if refs := obj.GetOwnerReferences(); len(refs) > 0 {
		refs = slices.Clone(refs) // a typed object returns its own slice
		for i := range refs {
			refs[i].APIVersion = t.internLocked(refs[i].APIVersion)
			refs[i].Kind = t.internLocked(refs[i].Kind)
			refs[i].Name = t.internLocked(refs[i].Name)
		}
		obj.SetOwnerReferences(refs)
	}
}
