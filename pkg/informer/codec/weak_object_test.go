package codec

import (
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWeakObjectFollowsItsObject(t *testing.T) {
	list := &corev1.PodList{Items: make([]corev1.Pod, 3)}
	list.Items[1].Name = "b"
	w := MakeWeakObject(&list.Items[1]) // an interior pointer, as a list's items are
	got, ok := w.Value().(*corev1.Pod)
	if !ok || got != &list.Items[1] || got.Name != "b" {
		t.Fatalf("Value() = %v, want the list's second pod", w.Value())
	}
	runtime.KeepAlive(list)

	w = weakOfNewPod()
	runtime.GC()
	runtime.GC()
	if v := w.Value(); v != nil {
		t.Fatalf("Value() = %v after the pod was reclaimed, want nil", v)
	}
}

func weakOfNewPod() WeakObject {
	return MakeWeakObject(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gone"}})
}

func TestWeakObjectRefersToNothingForNonPointers(t *testing.T) {
	var nilPod *corev1.Pod
	for _, o := range []any{nil, nilPod, corev1.Pod{}, &struct{}{}} {
		if v := MakeWeakObject(o).Value(); v != nil {
			t.Fatalf("MakeWeakObject(%T).Value() = %v, want nil", o, v)
		}
	}
}
