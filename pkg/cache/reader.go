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
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/deltacache/deltacache/pkg/informer"
)

// errContinueNotSupported is controller-runtime's error for List with Continue.
var errContinueNotSupported = errors.New("continue list option is not supported by the cache")

// Get copies the object named key, of out's GVK and Go type, from the cache into out.
//
// The informer is created if needed (see GetInformer); before Start, Get returns
// *cache.ErrCacheNotStarted, after Start it first waits for a new informer to sync —
// with several namespaces configured, only for the informer of key's namespace, so a
// namespace that cannot be listed does not fail reads of the others.
// With Options.ReaderFailOnMissingInformer, a kind without an informer returns
// *cache.ErrResourceNotCached. A missing object returns a NotFound error whose resource
// is the kind (as controller-runtime's); of a sharded kind (WithSharding), only where this
// replica would hold the object if it existed, else an error wrapping ErrNotInShard (see
// WithSharding). out receives a deep copy with its GVK set,
// unless UnsafeDisableDeepCopy is in effect (per call, else ByObject, DefaultNamespaces
// or DefaultUnsafeDisableDeepCopy): then out shares the cached object's maps and slices
// and must not be mutated. A per-call UnsafeDisableDeepCopy(false) re-enables the copy
// (controller-runtime ignores it when the default is true). For cluster-scoped kinds the
// key's namespace is ignored; with namespaces configured, a namespace that is not cached
// is an error.
func (c *Cache) Get(ctx context.Context, key client.ObjectKey, out client.Object, opts ...client.GetOption) error {
	gvk, err := apiutil.GVKForObject(out, c.scheme)
	if err != nil {
		return err
	}
	if c.isForeign(entryKey{gvk: gvk, shape: shapeOf(out)}, out) {
		return c.foreign.cache.Get(ctx, key, out, opts...)
	}
	e, s, err := c.scopeForRead(ctx, gvk, key.Namespace, out)
	if e != nil && !e.namespaced {
		key.Namespace = ""
	}
	if err != nil {
		if errors.Is(err, errNamespaceNotCached) {
			return fmt.Errorf("unable to get: %v because of unknown namespace for the cache", key)
		}
		return err
	}

	getOpts := client.GetOptions{}
	getOpts.ApplyOptions(opts)

	storeKey := key.Name
	if key.Namespace != "" {
		storeKey = key.Namespace + "/" + key.Name
	}
	item, exists, done, err := s.lookup(storeKey, out, gvk)
	// A sharded kind's miss while the key's delta is being applied (its store write
	// published, the batch not done) is read again once it is: whether the absence is
	// final (NotFound) or not (ErrNotInShard) is known then.
	if err == nil && !done && !exists && c.isSharded(gvk) && s.informer.AwaitApplied(storeKey, shardedMissWait) {
		item, exists, done, err = s.lookup(storeKey, out, gvk)
	}
	if done || err != nil {
		return err
	}
	if !exists {
		if c.isSharded(gvk) {
			return c.notHeldError(gvk, key, storeKey, s.informer)
		}
		return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
	}
	obj, ok := item.(runtime.Object)
	if !ok {
		return fmt.Errorf("cache contained %T, which is not an Object", item)
	}
	if s.detector != nil {
		s.detector.check(storeKey, obj)
	}
	copied := !disableDeepCopy(s.scope.unsafeDisableDeepCopy, getOpts.UnsafeDisableDeepCopy) || s.readsCopy
	if copied && !s.readsCopy {
		obj = obj.DeepCopyObject()
	}
	outVal, objVal := reflect.ValueOf(out), reflect.ValueOf(obj)
	if !objVal.Type().AssignableTo(outVal.Type()) {
		return fmt.Errorf("cache had type %s, but %s was asked for", objVal.Type(), outVal.Type())
	}
	reflect.Indirect(outVal).Set(reflect.Indirect(objVal))
	if copied {
		out.GetObjectKind().SetGroupVersionKind(gvk)
	}
	return nil
}

// List fills list with the cached objects of its element kind and Go type that match
// opts.
//
// The informer is created and waited for as in Get (ErrCacheNotStarted before Start,
// ErrResourceNotCached with ReaderFailOnMissingInformer; with several namespaces, the
// informers of the namespaces listed). The element kind is the
// list's kind without "List"; an *unstructured.UnstructuredList lists
// *unstructured.Unstructured, a *metav1.PartialObjectMetadataList lists
// *metav1.PartialObjectMetadata. Candidates come from, in order of preference:
//   - a field selector (MatchingFields): every requirement must be "=" or "==" (else
//     "non-exact field matches are not supported by the cache"); the first is looked up
//     in its "field:<name>" index, the others filter; a missing index is an error;
//   - a label selector with "=", "==" or "in" on keys declared with WithLabelIndexes,
//     or on keys the cache indexed by itself (see Config.DisableAdaptiveIndexes): the
//     narrowest "label:<key>" index;
//   - InNamespace: the namespace index;
//   - every object of the kind.
//
// The label selector then filters the candidates, Limit stops after that many matches
// (both checked on the stored records, before decoding: labels are read from the
// stored bytes, and only the items returned are decoded), and each item is deep-copied
// with its GVK set unless UnsafeDisableDeepCopy is in effect (as for Get). Items replace the list's previous items; the continue token is
// "continue-not-supported" and Continue is an error. ListStats records the path taken.
// With several namespaces configured, a List without namespace concatenates them (in
// namespace order) and a namespace that is not cached is an error.
func (c *Cache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, example, err := c.objectTypeForListObject(list)
	if err != nil {
		return err
	}
	if c.isForeign(entryKey{gvk: gvk, shape: shapeOf(example)}, example) {
		return c.foreign.cache.List(ctx, list, opts...)
	}
	listOpts := client.ListOptions{}
	listOpts.ApplyOptions(opts)
	e, scopes, err := c.scopesForRead(ctx, gvk, &listOpts, example)
	if err != nil {
		return err
	}
	plan, err := c.planList(e, scopes, &listOpts)
	if err != nil {
		return err
	}
	c.stats.record(gvk, plan.path)

	var items []listItem
	limit := listOpts.Limit
	slots := slotsFor(list, example, &plan, scopes, listOpts.Namespace, limit)
	for _, s := range scopes {
		// The label selector and Limit are checked before decoding (Indexer.Select).
		sel := informer.Selection{Labels: listOpts.LabelSelector}
		if slots != nil {
			sel.Into = slots.next
		}
		if limit > 0 {
			if int64(len(items)) >= limit {
				break
			}
			sel.Limit = int(limit - int64(len(items)))
		}
		selected, err := plan.candidates(s.indexer, listOpts.Namespace, sel)
		if err != nil {
			return err
		}
		copyItems := !disableDeepCopy(s.scope.unsafeDisableDeepCopy, listOpts.UnsafeDisableDeepCopy) || s.readsCopy
		if items == nil {
			items = make([]listItem, 0, len(selected))
		}
		for _, candidate := range selected {
			obj, ok := candidate.(runtime.Object)
			if !ok {
				return fmt.Errorf("cache contained %T, which is not an Object", candidate)
			}
			if s.detector != nil {
				m, err := apimeta.Accessor(obj)
				if err != nil {
					return err
				}
				s.detector.check(toolscache.MetaObjectToName(m).String(), obj)
			}
			items = append(items, listItem{obj: obj, copy: copyItems, own: s.readsCopy})
		}
	}
	if slots == nil || !slots.set(items, gvk) {
		if err := setListItems(list, items, gvk); err != nil {
			return err
		}
	}
	list.SetContinue("continue-not-supported")
	return nil
}

// scopeForRead returns the entry of gvk and obj's shape (typed, unstructured or
// metadata-only) and its scope caching namespace (ignored for a cluster-scoped kind),
// synced: the lookup of a Get, WaitForResourceVersion and WaitForDeletion. A synced
// scope is found in one call into informers.go (shapeOf, informerMap.readyScope);
// otherwise the entry is created if needed (getEntry; *cache.ErrResourceNotCached with
// ReaderFailOnMissingInformer) and the scope waited for (waitForScopes, whose errors
// it returns). Other errors: *cache.ErrCacheNotStarted before Start (after the entry
// was created, so that Start runs it), and an error wrapping errNamespaceNotCached,
// returned with the entry, when no scope caches namespace.
func (c *Cache) scopeForRead(
	ctx context.Context, gvk schema.GroupVersionKind, namespace string, obj runtime.Object,
) (*entry, *scopedInformer, error) {
	key := entryKey{gvk: gvk, shape: shapeOf(obj)}
	if e, s, ok := c.informers.readyScope(key, namespace); ok {
		return e, s, nil
	}
	e, started, err := c.getEntry(ctx, key, obj, c.readerFailOnMissingInformer, false)
	if err != nil {
		return nil, nil, err
	}
	if !started {
		return nil, nil, &crcache.ErrCacheNotStarted{}
	}
	if !e.namespaced {
		namespace = ""
	}
	s, err := e.scopeForNamespace(namespace)
	if err != nil {
		return e, nil, err
	}
	if err := waitForScopes(ctx, e.key, []*scopedInformer{s}, obj, c.settings.WaitThroughSyncErrors); err != nil {
		return nil, nil, err
	}
	return e, s, nil
}

// scopesForRead is scopeForRead for a List with opts whose items are of example's Go
// type: the entry of gvk and that shape, and the scopes opts.Namespace reads (see
// entry.scopesForList), synced. Errors as scopeForRead's, in the same order, with
// errContinueNotSupported for opts.Continue once the entry exists and the cache has
// started.
func (c *Cache) scopesForRead(
	ctx context.Context, gvk schema.GroupVersionKind, opts *client.ListOptions, example runtime.Object,
) (*entry, []*scopedInformer, error) {
	key := entryKey{gvk: gvk, shape: shapeOf(example)}
	if opts.Continue == "" {
		if e, scopes, ok := c.informers.readyScopes(key, opts.Namespace); ok {
			return e, scopes, nil
		}
	}
	e, started, err := c.getEntry(ctx, key, example, c.readerFailOnMissingInformer, false)
	if err != nil {
		return nil, nil, err
	}
	if !started {
		return nil, nil, &crcache.ErrCacheNotStarted{}
	}
	if opts.Continue != "" {
		return nil, nil, errContinueNotSupported
	}
	scopes, err := e.scopesForList(opts.Namespace)
	if err != nil {
		return nil, nil, err
	}
	if err := waitForScopes(ctx, key, scopes, example, c.settings.WaitThroughSyncErrors); err != nil {
		return nil, nil, err
	}
	return e, scopes, nil
}

// listPlan is how one List selects candidates in each scope's store.
type listPlan struct {
	path   listPath
	fields fields.Requirements
	labels []labelLookup
	// labelsAnswered: labels is one lookup that is the whole label selector, so
	// every object its index files under the values matches the selector.
	labelsAnswered bool
}

// planList validates the options against e and chooses the narrowest path.
func (c *Cache) planList(e *entry, scopes []*scopedInformer, opts *client.ListOptions) (listPlan, error) {
	if opts.FieldSelector != nil {
		if err := validateFieldSelector(opts.FieldSelector); err != nil {
			return listPlan{}, err
		}
		reqs := opts.FieldSelector.Requirements()
		for _, s := range scopes {
			if err := missingFieldIndexes(s.indexer, reqs, e.key.String()); err != nil {
				return listPlan{}, err
			}
		}
		return listPlan{path: pathFieldIndex, fields: reqs}, nil
	}
	if lookups := indexableLabelRequirements(opts.LabelSelector, c.settings.LabelIndexes); len(lookups) > 0 {
		return labelPlan(opts.LabelSelector, lookups), nil
	}
	// An adaptive index answers, or the List is a scan, which may trigger one.
	if lookups := c.adaptive.plan(e, scopes, opts); len(lookups) > 0 {
		c.stats.recordAdaptive(e.key.gvk)
		return labelPlan(opts.LabelSelector, lookups), nil
	}
	if opts.Namespace != "" {
		return listPlan{path: pathNamespaceIndex}, nil
	}
	return listPlan{path: pathScan}, nil
}

// labelPlan is the plan of a List whose selector sel label indexes answer with
// lookups (indexableLabelRequirements).
func labelPlan(sel labels.Selector, lookups []labelLookup) listPlan {
	reqs, _ := sel.Requirements()
	return listPlan{path: pathLabelIndex, labels: lookups, labelsAnswered: len(lookups) == 1 && len(reqs) == 1}
}

// candidates returns the objects of one store that the plan selects and sel keeps,
// decoding only those (see informer.Indexer.Select).
func (p *listPlan) candidates(indexer *informer.Indexer, namespace string, sel informer.Selection) ([]any, error) {
	switch p.path {
	case pathFieldIndex:
		return candidatesByFields(indexer, p.fields, namespace, sel)
	case pathLabelIndex:
		return candidatesByLabels(indexer, p.labels, p.labelsAnswered, namespace, sel)
	default: // pathNamespaceIndex, pathScan
		return candidatesOfScope(indexer, namespace, sel)
	}
}

// candidatesOfScope returns what sel keeps of namespace's objects (the namespace index),
// or of every object when namespace is "".
func candidatesOfScope(indexer *informer.Indexer, namespace string, sel informer.Selection) ([]any, error) {
	if namespace != "" {
		return indexer.Select(informer.Candidates{Index: toolscache.NamespaceIndex, Values: []string{namespace}}, sel)
	}
	return indexer.Select(informer.Candidates{}, sel)
}

// objectTypeForListObject returns the element GVK of list and a fresh object of the
// element's Go type: the list kind without its "List" suffix; *unstructured.Unstructured
// for an unstructured list, *metav1.PartialObjectMetadata for a
// PartialObjectMetadataList, the Scheme's type otherwise.
func (c *Cache) objectTypeForListObject(list client.ObjectList) (schema.GroupVersionKind, runtime.Object, error) {
	gvk, err := apiutil.GVKForObject(list, c.scheme)
	if err != nil {
		return schema.GroupVersionKind{}, nil, err
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	switch list.(type) {
	case runtime.Unstructured:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return gvk, u, nil
	case *metav1.PartialObjectMetadataList:
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		return gvk, m, nil
	}
	obj, err := c.scheme.New(gvk)
	if err != nil {
		return schema.GroupVersionKind{}, nil, err
	}
	return gvk, obj, nil
}

// disableDeepCopy resolves UnsafeDisableDeepCopy: the per-call value when set, else
// the scope's default.
func disableDeepCopy(scopeDefault bool, perCall *bool) bool {
	if perCall != nil {
		return *perCall
	}
	return scopeDefault
}

// lookup reads storeKey: into out when getInto can (done), else the stored item and
// whether it exists.
func (s *scopedInformer) lookup(storeKey string, out client.Object, gvk schema.GroupVersionKind) (
	item any, exists, done bool, err error,
) {
	if done, err = s.getInto(storeKey, out, gvk); done || err != nil {
		return nil, false, done, err
	}
	item, exists, err = s.indexer.GetByKey(storeKey)
	return item, exists, false, err
}

// getInto answers a Get of a compact store by decoding the stored bytes straight into
// out (zeroed first), with gvk set; done is false when it cannot (out of another Go
// type than the store's, the object held decoded or absent: out is then untouched), and
// the caller reads with GetByKey.
func (s *scopedInformer) getInto(storeKey string, out client.Object, gvk schema.GroupVersionKind) (bool, error) {
	if !s.readsCopy || s.detector != nil {
		return false, nil
	}
	if reflect.TypeOf(out) != s.storedType {
		return false, nil
	}
	_, done, err := s.indexer.GetInto(storeKey, out)
	if !done || err != nil {
		return done, err
	}
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return true, nil
}
