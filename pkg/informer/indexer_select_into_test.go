package informer

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
)

// slotsOf returns a Selection.Into handing out the elements of items in order,
// and counts the calls.
func slotsOf(items []corev1.Pod, calls *int) func() any {
	return func() any {
		i := *calls
		*calls++
		return &items[i]
	}
}

func TestSelectIntoDecodesKeptRecordsIntoTheCallersValues(t *testing.T) {
	pods := selectPods(100)
	ix := newSelectIndexer(t, podCodec(t).StorageCodec, pods)
	from := Candidates{Index: "app", Values: []string{"match"}}
	want, err := ix.Select(from, Selection{Labels: mustParse(t, "tiers")})
	if err != nil || len(want) != 10 {
		t.Fatalf("without Into: %d objects, %v", len(want), err)
	}
	items := make([]corev1.Pod, 10)
	calls := 0
	got, err := ix.Select(from, Selection{Labels: mustParse(t, "tiers"), Into: slotsOf(items, &calls)})
	if err != nil {
		t.Fatal(err)
	}
	if calls != len(want) || len(got) != len(want) {
		t.Fatalf("Into called %d times, %d objects returned; want %d of each", calls, len(got), len(want))
	}
	for i := range got {
		if got[i] != any(&items[i]) {
			t.Errorf("object %d is %p, not the value Into gave (%p)", i, got[i], &items[i])
		}
		if !apiequality.Semantic.DeepEqual(got[i], want[i]) {
			t.Errorf("object %d decoded into the slot differs from a decoded one: %v", i, got[i].(*corev1.Pod).Name)
		}
	}
	// A label selector that rejects some candidates on their bytes asks no slot for them.
	calls = 0
	clear(items)
	got, err = ix.Select(Candidates{}, Selection{Labels: mustParse(t, "app=match"), Into: slotsOf(items, &calls)})
	if err != nil || calls != len(got) || len(got) != 10 {
		t.Errorf("app=match over 100 pods: %d objects, Into called %d times, %v; want 10 and 10", len(got), calls, err)
	}
}

func TestSelectIntoLeavesOtherObjectsAsTheyAre(t *testing.T) {
	c := podCodec(t)
	c.failEncode = map[string]bool{"p0010": true} // held decoded
	pods := selectPods(30)
	ix := newSelectIndexer(t, c.StorageCodec, nil)
	ixFail := NewIndexerWithOptions(ix.keyFunc, selectIndexers(), IndexerOptions{Codec: c})
	for _, p := range pods {
		if err := ixFail.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	items := make([]corev1.Pod, 3)
	calls := 0
	got, err := ixFail.Select(Candidates{Index: "app", Values: []string{"match"}}, Selection{Into: func() any {
		return slotsOf(items, &calls)()
	}})
	if err != nil || len(got) != 3 {
		t.Fatalf("%d objects, %v", len(got), err)
	}
	slot := 0
	for _, o := range got {
		p := o.(*corev1.Pod)
		if p.Name == "p0010" {
			if p == &items[0] || p == &items[1] || p == &items[2] {
				t.Errorf("the object held decoded was put in a slot")
			}
			continue
		}
		if p.Name != "p0000" && p.Name != "p0020" {
			t.Errorf("unexpected object %s", p.Name)
		}
		if p != &items[slot] {
			t.Errorf("%s is not in slot %d", p.Name, slot)
		}
		slot++
	}
	if calls != 2 {
		t.Errorf("Into called %d times, want 2 (p0010 is held decoded: a copy of its own)", calls)
	}

	// A value of another type than the codec's: the object comes back decoded
	// as without Into, and no codec error is reported.
	var reported []string
	ixOther := NewIndexerWithOptions(ix.keyFunc, selectIndexers(), IndexerOptions{Codec: podCodec(t).StorageCodec,
		OnCodecError: func(key string, _ error) { reported = append(reported, key) }})
	for _, p := range pods[:11] {
		if err := ixOther.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	got, err = ixOther.Select(Candidates{Index: "app", Values: []string{"match"}},
		Selection{Into: func() any { return &corev1.ConfigMap{} }})
	if err != nil || len(got) != 2 || len(reported) != 0 {
		t.Fatalf("Into of the wrong type: %d objects, %v, codec errors for %v", len(got), err, reported)
	}
	if _, ok := got[0].(runtime.Object).(*corev1.Pod); !ok {
		t.Errorf("got %T, want a *Pod", got[0])
	}
}
