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

//nolint:goconst // Test fixtures read better as literals.
package cache

import (
	"slices"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/deltacache/deltacache/pkg/informer"
)

// The label and field index functions return plain values; the informer of a
// namespace-scoped index (as newEntry makes them) hands them out, through GetIndexers,
// in controller-runtime's layout.
func TestLabelIndexFuncAnswersInControllerRuntimesLayout(t *testing.T) {
	fn := labelIndexFunc(appLabel, nil)
	got, err := fn(configMap("a", "x", map[string]string{appLabel: webApp}))
	if err != nil || !slices.Equal(got, []string{webApp}) {
		t.Errorf("plain: %v %v", got, err)
	}
	layout := newTestIndexer(t).GetIndexers()[LabelIndexName(appLabel)]
	got, err = layout(configMap("a", "x", map[string]string{appLabel: webApp}))
	if err != nil || !slices.Equal(got, []string{"a/web", "__all_namespaces/web"}) {
		t.Errorf("namespaced: %v %v", got, err)
	}
	got, _ = layout(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{appLabel: webApp}}})
	if !slices.Equal(got, []string{"__all_namespaces/web"}) {
		t.Errorf("cluster-scoped: %v", got)
	}
	got, _ = layout(configMap("a", "x", map[string]string{"other": webApp}))
	if len(got) != 0 {
		t.Errorf("without the label: %v", got)
	}
	got, _ = layout(configMap("a", "x", map[string]string{appLabel: ""}))
	if !slices.Equal(got, []string{"a/", "__all_namespaces/"}) {
		t.Errorf("empty value: %v", got)
	}
}

func TestFieldIndexFuncFollowsControllerRuntimeConvention(t *testing.T) {
	fn := fieldIndexFunc(func(o client.Object) []string { return []string{"x", "y"} }, nil)
	if got, err := fn(configMap("a", "n", nil)); err != nil || !slices.Equal(got, []string{"x", "y"}) {
		t.Errorf("plain: %v %v", got, err)
	}
	idx := informer.NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{"field:f": fn},
		informer.IndexerOptions{NamespaceScoped: func(string) bool { return true }})
	layout := idx.GetIndexers()["field:f"]
	got, err := layout(configMap("a", "n", nil))
	if err != nil || !slices.Equal(got, []string{"a/x", "a/y", "__all_namespaces/x", "__all_namespaces/y"}) {
		t.Errorf("namespaced: %v %v", got, err)
	}
	got, _ = layout(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}})
	if !slices.Equal(got, []string{"__all_namespaces/x", "__all_namespaces/y"}) {
		t.Errorf("cluster-scoped: %v", got)
	}
	if _, err := fn("not an object"); err == nil {
		t.Error("non-object accepted")
	}
}

func TestIndexableLabelRequirements(t *testing.T) {
	indexed := []string{appLabel, tierLabel}
	for _, tc := range []struct {
		selector string
		want     []labelLookup
	}{
		{"app=web", []labelLookup{{key: appLabel, values: []string{webApp}}}},
		{"app==web,tier in (a,b)", []labelLookup{{key: appLabel, values: []string{webApp}}, {key: tierLabel, values: []string{"a", "b"}}}},
		{"app!=web,tier notin (a),!app,tier", nil},
		{"other=x", nil},
		{"other=x,app in (z)", []labelLookup{{key: appLabel, values: []string{"z"}}}},
	} {
		sel, err := labels.Parse(tc.selector)
		if err != nil {
			t.Fatal(err)
		}
		got := indexableLabelRequirements(sel, indexed)
		if !slices.EqualFunc(got, tc.want, func(a, b labelLookup) bool {
			return a.key == b.key && slices.Equal(a.values, b.values)
		}) {
			t.Errorf("%q: got %v, want %v", tc.selector, got, tc.want)
		}
	}
	if got := indexableLabelRequirements(labels.Nothing(), indexed); got != nil {
		t.Errorf("Nothing(): %v", got)
	}
	if got := indexableLabelRequirements(nil, indexed); got != nil {
		t.Errorf("nil: %v", got)
	}
}

func newTestIndexer(t *testing.T, objs ...any) *informer.Indexer {
	t.Helper()
	indexers := labelIndexers([]string{appLabel, tierLabel}, nil)
	indexers[toolscache.NamespaceIndex] = toolscache.MetaNamespaceIndexFunc
	byLabel := func(key string) client.IndexerFunc {
		return func(o client.Object) []string { return []string{o.GetLabels()[key]} }
	}
	indexers[FieldIndexName(tierLabel)] = fieldIndexFunc(byLabel(tierLabel), nil)
	indexers[FieldIndexName(appLabel)] = fieldIndexFunc(byLabel(appLabel), nil)
	// As newEntry makes them: the label and field indexes are namespace-scoped.
	idx := informer.NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, indexers, informer.IndexerOptions{
		NamespaceScoped: func(name string) bool { return name != toolscache.NamespaceIndex },
	})
	for _, obj := range objs {
		if err := idx.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	return idx
}

func namesOf(objs []any) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		cm := o.(*corev1.ConfigMap)
		out = append(out, cm.Namespace+"/"+cm.Name)
	}
	slices.Sort(out)
	return out
}

func TestCandidatesByLabelsPicksTheNarrowestLookup(t *testing.T) {
	idx := newTestIndexer(t,
		configMap("a", "w1", map[string]string{appLabel: webApp, tierLabel: "front"}),
		configMap("a", "w2", map[string]string{appLabel: webApp, tierLabel: "back"}),
		configMap("b", "w3", map[string]string{appLabel: webApp, tierLabel: "back"}),
		configMap("b", "d1", map[string]string{appLabel: "db", tierLabel: "back"}),
	)
	lookups := []labelLookup{{key: tierLabel, values: []string{"back"}}, {key: appLabel, values: []string{"db"}}}
	got, err := candidatesByLabels(idx, lookups, false, "", informer.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"b/d1"}; !slices.Equal(namesOf(got), want) {
		t.Errorf("narrowest: got %v, want %v (app=db has one object, tier=back three)", namesOf(got), want)
	}
	got, _ = candidatesByLabels(idx, []labelLookup{{key: appLabel, values: []string{webApp, "db"}}}, false, "b", informer.Selection{})
	if want := []string{"b/d1", "b/w3"}; !slices.Equal(namesOf(got), want) {
		t.Errorf("in (web,db) in b: got %v, want %v", namesOf(got), want)
	}
	got, _ = candidatesByLabels(idx, []labelLookup{{key: appLabel, values: []string{webApp}}, {key: tierLabel, values: []string{"none"}}}, false, "",
		informer.Selection{})
	if len(got) != 0 {
		t.Errorf("empty lookup: got %v", namesOf(got))
	}
}

func TestCandidatesByFieldsUsesFirstRequirementAndFiltersTheRest(t *testing.T) {
	idx := newTestIndexer(t,
		configMap("a", "w1", map[string]string{appLabel: webApp, tierLabel: "front"}),
		configMap("a", "w2", map[string]string{appLabel: webApp, tierLabel: "back"}),
		configMap("b", "w3", map[string]string{appLabel: webApp, tierLabel: "back"}),
	)
	sel := fields.SelectorFromSet(fields.Set{tierLabel: "back", appLabel: webApp})
	if err := validateFieldSelector(sel); err != nil {
		t.Fatal(err)
	}
	got, err := candidatesByFields(idx, sel.Requirements(), "", informer.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a/w2", "b/w3"}; !slices.Equal(namesOf(got), want) {
		t.Errorf("all namespaces: got %v, want %v", namesOf(got), want)
	}
	got, _ = candidatesByFields(idx, sel.Requirements(), "b", informer.Selection{})
	if want := []string{"b/w3"}; !slices.Equal(namesOf(got), want) {
		t.Errorf("namespace b: got %v, want %v", namesOf(got), want)
	}
	if err := validateFieldSelector(fields.Everything()); err == nil {
		t.Error("an empty field selector counted as exact")
	}
	missing := fields.SelectorFromSet(fields.Set{"nope": "x"}).Requirements()
	if err := missingFieldIndexes(idx, missing, configMapKind); err == nil {
		t.Error("missing index not reported")
	}
}

// With interning (the default), the index values of objects filed under one value are
// one shared string, and a value seen before is found without allocating.
func TestIndexValuesAreSharedStringsWhenInterned(t *testing.T) {
	intern := newInterner()
	sameData := func(a, b []string) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] || unsafe.StringData(a[i]) != unsafe.StringData(b[i]) {
				return false
			}
		}
		return true
	}
	// Two objects whose label values are equal strings in separate memory.
	one, two := configMap("a", "one", map[string]string{appLabel: strings.Clone(webApp)}), configMap("a", "two",
		map[string]string{appLabel: strings.Clone(webApp)})
	for name, fn := range map[string]toolscache.IndexFunc{
		"label": labelIndexFunc(appLabel, intern),
		"field": fieldIndexFunc(func(o client.Object) []string { return []string{o.GetLabels()[appLabel]} }, intern),
	} {
		first, err1 := fn(one)
		second, err2 := fn(two)
		if err1 != nil || err2 != nil || !slices.Equal(first, []string{webApp}) {
			t.Fatalf("%s: values %v, %v (%v, %v)", name, first, second, err1, err2)
		}
		if !sameData(first, second) {
			t.Errorf("%s: two objects filed under the same values hold separate strings", name)
		}
		if unsafe.StringData(first[0]) == unsafe.StringData(one.GetLabels()[appLabel]) {
			t.Errorf("%s: the table kept the first object's own string instead of a copy", name)
		}
	}
	longer := "a-label-value-longer-than-thirty-two-bytes"
	_ = intern.shared(longer)
	for _, value := range []string{webApp, longer} {
		if allocs := testing.AllocsPerRun(100, func() { _ = intern.shared(value) }); allocs != 0 {
			t.Errorf("known value %q cost %v allocations, want 0", value, allocs)
		}
	}
	var off *interner
	first, _ := labelIndexFunc(appLabel, off)(one)
	second, _ := labelIndexFunc(appLabel, off)(two)
	if !slices.Equal(first, second) || sameData(first, second) {
		t.Errorf("without interning: %v and %v, want equal values in separate strings", first, second)
	}
	long := strings.Repeat("x", internMaxLen+1)
	if got := intern.shared(long); unsafe.StringData(got) != unsafe.StringData(long) {
		t.Errorf("a value longer than the intern limit was copied")
	}
}
