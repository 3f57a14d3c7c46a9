package cache

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// listBy lists config maps with selector and opts.
func listBy(t *testing.T, c *Cache, selector string, opts ...client.ListOption) *corev1.ConfigMapList {
	t.Helper()
	sel, err := labels.Parse(selector)
	if err != nil {
		t.Fatal(err)
	}
	var list corev1.ConfigMapList
	if err := c.List(testCtx(t), &list, append(opts, client.MatchingLabelsSelector{Selector: sel})...); err != nil {
		t.Fatal(err)
	}
	return &list
}

// TestListAnsweredByALabelIndexDecodesIntoItems: a List whose selector one label
// index answers decodes its items in place; it returns what the same List checked
// against the selector returns, with the kind set, objects of the caller's own, one
// allocation less per item.
func TestListAnsweredByALabelIndexDecodesIntoItems(t *testing.T) {
	// Compact storage named: make test's second pass (DELTACACHE_STORAGE=Decoded) would
	// hold the objects decoded, where a List copies them as before.
	c, _, _ := startAdaptive(t, 300, nil, WithLabelIndexes(appLabel), WithStorage(StorageCompact))
	for _, tc := range []struct {
		answered, checked string
		opts              []client.ListOption
		want              int
	}{
		{"app=a3", "app=a3,other!=x", nil, 30},
		{"app in (a3,a4)", "app in (a3,a4),other!=x", nil, 60},
		{"app=a3", "app=a3,other!=x", []client.ListOption{client.InNamespace("b")}, 10},
		{"app=a3", "app=a3,other!=x", []client.ListOption{client.Limit(7)}, 7},
		{"app=none", "app=none,other!=x", nil, 0},
	} {
		got, want := listBy(t, c, tc.answered, tc.opts...), listBy(t, c, tc.checked, tc.opts...)
		if len(got.Items) != tc.want || !apiequality.Semantic.DeepEqual(got.Items, want.Items) {
			t.Errorf("%s %v: %d items, want %d equal to %q's", tc.answered, tc.opts, len(got.Items), tc.want, tc.checked)
		}
		for i := range got.Items {
			if got.Items[i].Kind != "ConfigMap" || got.Items[i].APIVersion != "v1" {
				t.Errorf("%s: item %d has kind %q %q", tc.answered, i, got.Items[i].APIVersion, got.Items[i].Kind)
			}
		}
		if cap(got.Items) != len(got.Items) {
			t.Errorf("%s: Items has cap %d for %d items", tc.answered, cap(got.Items), len(got.Items))
		}
	}
	first, second := listBy(t, c, "app=a3"), listBy(t, c, "app=a3")
	first.Items[0].Labels[appLabel] = "changed"
	if second.Items[0].Labels[appLabel] != "a3" || listBy(t, c, "app=a3").Items[0].Labels[appLabel] != "a3" {
		t.Error("a List's items share their labels with another List's")
	}

	allocs := func(selector string) float64 {
		sel := labels.SelectorFromSet(nil)
		var err error
		if sel, err = labels.Parse(selector); err != nil {
			t.Fatal(err)
		}
		return testing.AllocsPerRun(20, func() {
			var list corev1.ConfigMapList
			if err := c.List(testCtx(t), &list, client.MatchingLabelsSelector{Selector: sel}); err != nil || len(list.Items) != 30 {
				t.Fatalf("%d items, %v", len(list.Items), err)
			}
		})
	}
	if answered, checked := allocs("app=a3"), allocs("app=a3,other!=x"); answered > checked-30 {
		t.Errorf("a List of 30 items answered by the index allocated %v times, checked %v: want at least one less per item",
			answered, checked)
	}
}
