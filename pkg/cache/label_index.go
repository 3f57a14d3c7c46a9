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
	"slices"
	"sync"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/informer"
)

// LabelIndexName returns the name of the index deltacache keeps for label key key
// (declared with WithLabelIndexes): "label:<key>".
func LabelIndexName(key string) string {
	return "label:" + key
}

// scopedIndexes names the indexes of one entry's informers that pkg/cache gave a
// function of plain values: the "label:<key>" indexes and IndexField's "field:<field>".
// Their informers file them namespace-scoped (informer.Options.NamespaceScoped) and
// answer in controller-runtime's layout, "<ns>/<value>" and "__all_namespaces/<value>",
// at half the entries. An index added by anyone else (GetInformer().AddIndexers) is
// filed as its function returns. A name is added before its index, and never removed.
type scopedIndexes struct {
	names sync.Map // string → struct{}
}

func (s *scopedIndexes) add(name string) { s.names.Store(name, struct{}{}) }

func (s *scopedIndexes) has(name string) bool {
	_, ok := s.names.Load(name)
	return ok
}

// labelIndexers returns the "label:<key>" indexers for keys, whose values come from
// intern (nil: built per object).
func labelIndexers(keys []string, intern *interner) toolscache.Indexers {
	indexers := make(toolscache.Indexers, len(keys))
	for _, key := range keys {
		indexers[LabelIndexName(key)] = labelIndexFunc(key, intern)
	}
	return indexers
}

// labelIndexFunc indexes an object by the value of its label key, nothing when the
// label is absent. An empty label value is a value like any other ("app=" matches
// objects whose label app is ""). The index is namespace-scoped (entry.scoped): its
// informer answers "<ns>/<value>" and "__all_namespaces/<value>", controller-runtime's
// layout, from the plain value. The value strings are intern's shared copies; intern
// may be nil.
func labelIndexFunc(key string, intern *interner) toolscache.IndexFunc {
	return func(obj any) ([]string, error) {
		m, err := apimeta.Accessor(obj)
		if err != nil {
			return nil, fmt.Errorf("label index %s: %w", LabelIndexName(key), err)
		}
		value, ok := m.GetLabels()[key]
		if !ok {
			return nil, nil
		}
		return []string{intern.shared(value)}, nil
	}
}

// labelLookup is one requirement of a label selector that an index can answer: the
// objects whose label key has one of values.
type labelLookup struct {
	key    string
	values []string
	// auto: the index is an adaptive one (adaptive_index.go), which may be dropped
	// between the List's plan and its read.
	auto bool
}

// indexableLabelRequirements returns the requirements of sel that a "label:<key>" index
// answers: "=", "==" and "in" on a key in indexed. Other operators ("!=", "notin",
// "exists", "!", comparisons) and keys without an index are left to filtering.
func indexableLabelRequirements(sel labels.Selector, indexed []string) []labelLookup {
	if sel == nil || len(indexed) == 0 {
		return nil
	}
	reqs, selectable := sel.Requirements()
	if !selectable {
		return nil
	}
	var lookups []labelLookup
	for i := range reqs {
		req := &reqs[i]
		switch req.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
		default:
			continue
		}
		if !slices.Contains(indexed, req.Key()) {
			continue
		}
		lookups = append(lookups, labelLookup{key: req.Key(), values: req.Values().List()})
	}
	return lookups
}

// candidatesByLabels returns the objects of the narrowest lookup that sel keeps: for
// every lookup it counts the index keys of its values (in namespace, or across
// namespaces when namespace is ""), then selects among the objects of the lookup with
// the fewest (informer.Indexer.Select, which decodes only what it keeps). sel holds the
// whole label selector, so the result is the intersection of all lookups without
// building it. An object carries one value per label key, so the objects of the values
// of one lookup are distinct. answered says that lookups is one lookup that is the whole
// selector: its objects are not checked against sel's labels again.
//
// An adaptive index dropped since the List was planned is not an error: the candidates
// are then those of the namespace index, or every object, selected by sel.
func candidatesByLabels(indexer *informer.Indexer, lookups []labelLookup, answered bool, namespace string,
	sel informer.Selection) ([]any, error) {
	fromIndex := sel
	if answered {
		fromIndex.Labels = nil
	}
	objs, err := candidatesByLabelIndexes(indexer, lookups, namespace, fromIndex)
	if err != nil && slices.ContainsFunc(lookups, func(l labelLookup) bool { return l.auto }) {
		sel.Into = nil // the namespace's candidates were not counted for slots
		return candidatesOfScope(indexer, namespace, sel)
	}
	return objs, err
}

// candidatesByLabelIndexes is candidatesByLabels without the fallback.
func candidatesByLabelIndexes(indexer *informer.Indexer, lookups []labelLookup, namespace string,
	sel informer.Selection) ([]any, error) {
	best := 0
	if len(lookups) > 1 {
		bestCount := -1
		for i, lookup := range lookups {
			count := 0
			for _, value := range lookup.values {
				keys, err := indexer.IndexKeys(LabelIndexName(lookup.key), KeyToNamespacedKey(namespace, value))
				if err != nil {
					return nil, err
				}
				count += len(keys)
			}
			if bestCount < 0 || count < bestCount {
				best, bestCount = i, count
			}
			if count == 0 {
				return nil, nil
			}
		}
	}
	lookup := lookups[best]
	values := make([]string, len(lookup.values))
	for i, value := range lookup.values {
		values[i] = KeyToNamespacedKey(namespace, value)
	}
	return indexer.Select(informer.Candidates{Index: LabelIndexName(lookup.key), Values: values, Distinct: true}, sel)
}
