package informer

import (
	"reflect"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/deltacache/deltacache/pkg/informer/codec"
	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// Handler objects under compact storage: the informer's side of the codec's
// promise that Encode leaves an object as it was (the codec's own tests are
// in pkg/informer/codec). The fixtures repeat the codec tests' own.

// The Quantities below are built as the API server's canonical strings parsed
// by resource.ParseQuantity, which is what a client decoding a watch event
// (protobuf, JSON or CBOR) holds: ParseQuantity keeps the string as the
// Quantity's cached string for some canonical forms ("100m", "1Gi") and not
// for others ("64Mi", "512Mi": multiples of 8 of a binary suffix).

// quantityPod is a pod with Quantities in a pointer field (an emptyDir's
// sizeLimit), which a protobuf Marshal reaches in place, and in
// ResourceLists (map values, which it copies).
func quantityPod(ns, name string) *corev1.Pod {
	p := pod(ns, name, "", "app=web")
	p.UID = types.UID("uid-" + name)
	p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("64Mi"))}}}}
	p.Spec.Containers = []corev1.Container{{Name: "c", Image: "app:1", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"),
			corev1.ResourceMemory: resource.MustParse("512Mi")},
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
	}}}
	return p
}

// quantityHPA is an autoscaling/v2 HorizontalPodAutoscaler with a memory
// target's averageValue and its current value (pointer fields).
func quantityHPA(ns, name string) *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{}
	h.Namespace, h.Name, h.UID = ns, name, types.UID("uid-"+name)
	h.Labels = map[string]string{"app": "web"}
	h.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
		MinReplicas:    ptr.To[int32](1),
		MaxReplicas:    5,
		Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{
				Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("512Mi"))}}}},
	}
	h.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceMemory, Current: autoscalingv2.MetricValueStatus{
			AverageValue: ptr.To(resource.MustParse("320Mi"))}}}}
	return h
}

// wireDecoded returns obj as a client decodes it from the API server's
// protobuf: the generated Unmarshal of its encoding, into a new object.
func wireDecoded(t testing.TB, obj runtime.Object) runtime.Object {
	t.Helper()
	data, err := obj.DeepCopyObject().(interface{ Marshal() ([]byte, error) }).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
	if err := out.(interface{ Unmarshal([]byte) error }).Unmarshal(data); err != nil {
		t.Fatal(err)
	}
	return out
}

// objectRecorder keeps the objects a handler receives, per key.
type objectRecorder struct {
	mu      sync.Mutex
	adds    map[string]any
	updates map[string][2]any // old, new of the last update
}

func newObjectRecorder() *objectRecorder {
	return &objectRecorder{adds: map[string]any{}, updates: map[string][2]any{}}
}

func (r *objectRecorder) OnAdd(obj any, _ bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.adds[keyOfObj(obj)] = obj
}

func (r *objectRecorder) OnUpdate(oldObj, newObj any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates[keyOfObj(newObj)] = [2]any{oldObj, newObj}
}

func (r *objectRecorder) OnDelete(any) {}

func (r *objectRecorder) add(key string) any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.adds[key]
}

func (r *objectRecorder) update(key string) (oldObj, newObj any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.updates[key]
	return u[0], u[1]
}

// With compact storage, handlers receive a watch event's object as the
// Reflector decoded it (kept after it was encoded for the store) and an
// update's old object freshly decoded from the store. Both must equal, by
// reflect.DeepEqual, the object as decoded from the server (what
// controller-runtime's cache hands out), so that an UpdateFunc comparing
// old.Spec with new.Spec sees a label-only update as one.
func TestHandlerObjectsOfCompactStorageEqualTheDecodedServerObject(t *testing.T) {
	type kind struct {
		name    string
		example runtime.Object
		newObj  func(ns, name string) runtime.Object
		relabel func(obj runtime.Object) runtime.Object
		specOf  func(obj any) any
	}
	kinds := []kind{{
		name: "Pod", example: &corev1.Pod{},
		newObj: func(ns, name string) runtime.Object { return quantityPod(ns, name) },
		relabel: func(obj runtime.Object) runtime.Object {
			p := obj.(*corev1.Pod).DeepCopy()
			p.Labels["rev"] = p.ResourceVersion
			return p
		},
		specOf: func(obj any) any { return obj.(*corev1.Pod).Spec },
	}, {
		name: "HorizontalPodAutoscaler", example: &autoscalingv2.HorizontalPodAutoscaler{},
		newObj: func(ns, name string) runtime.Object { return quantityHPA(ns, name) },
		relabel: func(obj runtime.Object) runtime.Object {
			h := obj.(*autoscalingv2.HorizontalPodAutoscaler).DeepCopy()
			h.Labels["rev"] = h.ResourceVersion
			return h
		},
		specOf: func(obj any) any { return obj.(*autoscalingv2.HorizontalPodAutoscaler).Spec },
	}}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			pc, err := codec.NewProtobuf(k.example)
			must(t, err)
			f := informertest.New(k.example)
			f.Create(k.newObj("a", "listed"))
			s := NewSharedIndexInformer(f, k.example, Options{StorageCodec: pc, Backoff: fastBackoff})
			rec := newObjectRecorder()
			addHandler(t, s, rec)
			startInformer(t, s)
			waitSynced(t, s.HasSyncedChecker())

			watched := f.Create(k.newObj("a", "watched"))
			eventually(t, 5*time.Second, "the watched add", func() bool { return rec.add("a/watched") != nil })
			if got, want := rec.add("a/watched"), wireDecoded(t, watched); !reflect.DeepEqual(got, want) {
				t.Errorf("watched add: handler object differs from the decoded server object:\n got: %#v\nwant: %#v",
					k.specOf(got), k.specOf(want))
			}
			for _, key := range []string{"a/listed", "a/watched"} {
				cur, _ := f.Get(key)
				updated := f.Update(k.relabel(cur))
				eventually(t, 5*time.Second, key+"'s update", func() bool {
					_, n := rec.update(key)
					return n != nil && objectRV(n) == objectRV(updated)
				})
				oldObj, newObj := rec.update(key)
				if !reflect.DeepEqual(k.specOf(oldObj), k.specOf(newObj)) {
					t.Errorf("%s: label-only update, but old.Spec and new.Spec differ by reflect.DeepEqual:\n old: %#v\n new: %#v",
						key, k.specOf(oldObj), k.specOf(newObj))
				}
				if want := wireDecoded(t, cur); !reflect.DeepEqual(oldObj, want) {
					t.Errorf("%s: update's old object differs from the decoded server object", key)
				}
				if want := wireDecoded(t, updated); !reflect.DeepEqual(newObj, want) {
					t.Errorf("%s: update's new object differs from the decoded server object", key)
				}
			}
		})
	}
}
