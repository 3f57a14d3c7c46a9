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
	"slices"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/deltacache/deltacache/pkg/informer"
)

// AllNamespacesIndexPrefix is the namespace part of the index values that match an
// object whatever its namespace: field and label indexes answer "<ns>/<value>" and
// "__all_namespaces/<value>" for a namespaced object, and only the latter for a
// cluster-scoped one. The same convention as controller-runtime's field indexes
// (deltacache files each object once per value, and its informer answers both forms:
// informer.IndexerOptions.NamespaceScoped).
const AllNamespacesIndexPrefix = "__all_namespaces"

// FieldIndexName returns the name of the index IndexField registers for field:
// "field:<field>", as controller-runtime names it.
func FieldIndexName(field string) string {
	return "field:" + field
}

// KeyToNamespacedKey returns the index value of value in namespace ns: "<ns>/<value>",
// or "__all_namespaces/<value>" when ns is "" (all namespaces or cluster scope).
func KeyToNamespacedKey(ns, value string) string {
	if ns != "" {
		return ns + "/" + value
	}
	return AllNamespacesIndexPrefix + "/" + value
}

// errNonExactFieldMatch is controller-runtime's error text for field selectors with
// operators other than "=" and "==".
var errNonExactFieldMatch = errors.New("non-exact field matches are not supported by the cache")

// IndexField adds an index named "field:<field>" to the informer of obj's kind and
// shape, creating the informer if needed (without waiting for it to sync, also after
// the cache started; an index added to a running informer is back-filled). For every
// value v that extractValue returns, the index answers "<ns>/<v>" and
// "__all_namespaces/<v>" for a namespaced object and only "__all_namespaces/<v>" for a
// cluster-scoped one, as controller-runtime's does (ByIndex, IndexKeys, GetIndexers), so
// List with MatchingFields{field: v} finds it with or without InNamespace; it files each
// object once per value, not twice (the informer's index is namespace-scoped:
// informer.IndexerOptions.NamespaceScoped). The objects passed to extractValue are of
// the informer's Go type.
//
// Errors: obj's GVK is unknown or has no REST mapping, or an index with that name
// already exists on the informer. Follows controller-runtime's informerCache.IndexField.
func (c *Cache) IndexField(
	ctx context.Context, obj client.Object, field string, extractValue client.IndexerFunc,
) error {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return err
	}
	key := entryKey{gvk: gvk, shape: shapeOf(obj)}
	if c.isForeign(key, obj) {
		return c.foreign.cache.IndexField(ctx, obj, field, extractValue)
	}
	e, _, err := c.getEntry(ctx, key, obj, false, false)
	if err != nil {
		return err
	}
	name := FieldIndexName(field)
	e.scoped.add(name)
	if err := e.informer.AddIndexers(toolscache.Indexers{name: fieldIndexFunc(extractValue, c.intern)}); err != nil {
		return fmt.Errorf("adding field index %q for %T: %w", field, obj, err)
	}
	return nil
}

// fieldIndexFunc wraps extractValue into the IndexFunc of a namespace-scoped index
// (entry.scoped): the values extractValue returns, as intern's shared copies (intern
// may be nil); the informer answers them in controller-runtime's layout.
func fieldIndexFunc(extractValue client.IndexerFunc, intern *interner) toolscache.IndexFunc {
	return func(raw any) ([]string, error) {
		obj, ok := raw.(client.Object)
		if !ok {
			return nil, fmt.Errorf("object of type %T is not an Object", raw)
		}
		values := extractValue(obj)
		out := make([]string, len(values))
		for i, v := range values {
			out[i] = intern.shared(v)
		}
		return out, nil
	}
}

// validateFieldSelector returns an error unless every requirement of sel is an exact
// match ("=" or "=="); a selector without requirements is not exact either, as in
// controller-runtime.
func validateFieldSelector(sel fields.Selector) error {
	reqs := sel.Requirements()
	if len(reqs) == 0 {
		return errNonExactFieldMatch
	}
	for _, req := range reqs {
		if req.Operator != selection.Equals && req.Operator != selection.DoubleEquals {
			return errNonExactFieldMatch
		}
	}
	return nil
}

// missingFieldIndexes returns an error naming every requirement of reqs whose
// "field:<name>" index does not exist on indexer.
func missingFieldIndexes(indexer *informer.Indexer, reqs fields.Requirements, kind string) error {
	indexers := indexer.GetIndexers()
	var missing []string
	for _, req := range reqs {
		if _, ok := indexers[FieldIndexName(req.Field)]; !ok && !slices.Contains(missing, req.Field) {
			missing = append(missing, req.Field)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("index with name %s does not exist for %s: "+
		"register it with IndexField(ctx, obj, %q, extractValue) before listing with MatchingFields",
		FieldIndexName(missing[0]), kind, missing[0])
}

// candidatesByFields answers an exact field selector: the first requirement is looked up
// in its index ("<ns>/<v>", or "__all_namespaces/<v>" when namespace is ""), every
// further requirement is checked on the index values stored with each candidate (the
// values controller-runtime's byIndexes, PR #2512, computes again), and sel (the label
// selector, Limit) is applied, before decoding (informer.Indexer.Select).
func candidatesByFields(indexer *informer.Indexer, reqs fields.Requirements, namespace string,
	sel informer.Selection) ([]any, error) {
	first := reqs[0]
	for _, req := range reqs[1:] {
		sel.Filed = append(sel.Filed, informer.IndexValue{
			Index: FieldIndexName(req.Field), Value: KeyToNamespacedKey(namespace, req.Value)})
	}
	from := informer.Candidates{
		Index: FieldIndexName(first.Field), Values: []string{KeyToNamespacedKey(namespace, first.Value)}}
	return indexer.Select(from, sel)
}
