package codec

import (
	"fmt"
	"reflect"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"
)

// The Quantities below are built as the API server's canonical strings parsed
// by resource.ParseQuantity, which is what a client decoding a watch event
// (protobuf, JSON or CBOR) holds: ParseQuantity keeps the string as the
// Quantity's cached string for some canonical forms ("100m", "1Gi") and not
// for others ("64Mi", "512Mi": multiples of 8 of a binary suffix).

// quantityPod is a pod with Quantities in a pointer field (an emptyDir's
// sizeLimit), which a protobuf Marshal reaches in place, and in
// ResourceLists (map values, which it copies).
func quantityPod(ns, name string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name),
		Labels: map[string]string{"app": "web"}}}
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
	data, err := obj.DeepCopyObject().(protoMessage).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
	if err := out.(protoMessage).Unmarshal(data); err != nil {
		t.Fatal(err)
	}
	return out
}

// quantityTestTypes are types whose objects hold Quantities that a protobuf
// Marshal reaches in place: through pointers (emptyDir sizeLimit, HPA
// targets, CSIStorageCapacity), struct fields and slice elements, and
// through pointers and slices inside map values (ResourceSlice device
// capacities).
var quantityTestTypes = []protoMessage{
	&corev1.Pod{}, &autoscalingv2.HorizontalPodAutoscaler{}, &storagev1.CSIStorageCapacity{},
	&resourcev1.ResourceSlice{}, &resourcev1.ResourceClaim{}, &corev1.PersistentVolumeClaim{},
	&corev1.Node{}, &corev1.LimitRange{},
}

var canonicalQuantities = []string{"100m", "1Gi", "3", "250M", "64Mi", "512Mi", "8Gi", "0", "1200m"}

// Encode must not modify the object (the package's contract, doc.go): randomly
// filled objects, their Quantities as a client decodes them, equal a deep
// copy taken before Encode, by reflect.DeepEqual.
// Reproduce with PROTO_DECODER_SEED=<seed>.
func TestProtobufCodecEncodeLeavesTheObjectUnchanged(t *testing.T) {
	seed := protoTestSeed(t)
	for i, m := range quantityTestTypes {
		t.Run(reflect.TypeOf(m).Elem().Name(), func(t *testing.T) {
			codec, err := NewProtobuf(m.(runtime.Object))
			must(t, err)
			f := newFiller(seed+int64(i)).Funcs(
				func(q *resource.Quantity, c randfill.Continue) {
					// Canonical strings, as the API server sends them; ParseQuantity
					// caches the first four, not the others.
					*q = resource.MustParse(canonicalQuantities[c.Intn(len(canonicalQuantities))])
				},
				func(r *runtime.RawExtension, c randfill.Continue) {
					// What a decode gives: the raw bytes, no Object.
					r.Raw = fmt.Appendf(nil, `{"n":%d}`, c.Intn(100))
				})
			for n := range 200 {
				obj := newOf(m).(runtime.Object)
				f.Fill(obj)
				obj = wireDecoded(t, obj) // Quantities as decoded, not as randomly built
				before := obj.DeepCopyObject()
				if _, err := codec.Encode(obj); err != nil {
					t.Fatalf("object %d: Encode: %v", n, err)
				}
				if !reflect.DeepEqual(obj, before) {
					t.Fatalf("object %d: Encode modified the object", n)
				}
			}
		})
	}
}

// The CBOR codecs leave objects as they were too: the typed one (CRD types)
// marshals Quantities by value, the unstructured one plain JSON values.
func TestCBORCodecEncodeLeavesQuantitiesUnchanged(t *testing.T) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(quantityPod("a", "u"))
	must(t, err)
	for _, obj := range []runtime.Object{quantityPod("a", "p"), quantityHPA("a", "h"), &unstructured.Unstructured{Object: u}} {
		t.Run(fmt.Sprintf("%T", obj), func(t *testing.T) {
			var codec storageCodec = NewUnstructuredCBOR()
			if _, ok := obj.(*unstructured.Unstructured); !ok {
				codec, err = NewCBOR(obj)
				must(t, err)
			}
			before := obj.DeepCopyObject()
			if _, err := codec.Encode(obj); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(obj, before) {
				t.Fatalf("Encode modified the object:\n got: %#v\nwant: %#v", obj, before)
			}
		})
	}
}

// BenchmarkProtobufCodecEncode measures one Encode of a newly decoded object,
// as the Reflector encodes each object it receives once: a pod as the API
// server returns it (Quantities in ResourceLists only), the same pod with an
// emptyDir sizeLimit, and an HPA with two Quantity pointers. Each iteration
// deep-copies the object first (so its Quantities hold no cached string
// from the iteration before); deepcopy=only measures that copy alone.
func BenchmarkProtobufCodecEncode(b *testing.B) {
	server := serverPod(1)
	withEmptyDir := server.DeepCopy()
	withEmptyDir.Spec.Volumes = append(withEmptyDir.Spec.Volumes, quantityPod("a", "p").Spec.Volumes...)
	for _, c := range []struct {
		name string
		obj  runtime.Object
	}{{"serverPod", server}, {"podWithEmptyDir", withEmptyDir}, {"hpa", quantityHPA("a", "h")}} {
		codec, err := NewProtobuf(c.obj)
		if err != nil {
			b.Fatal(err)
		}
		obj := wireDecoded(b, c.obj)
		b.Run("obj="+c.name+"/deepcopy=only", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = obj.DeepCopyObject()
			}
		})
		b.Run("obj="+c.name+"/deepcopy=then-encode", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := codec.Encode(obj.DeepCopyObject()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// planFields returns the names of the fields p (the plan of struct type t)
// walks.
func planFields(p *quantityPlan, t reflect.Type) []string {
	var out []string
	for _, f := range p.fields {
		for i := range t.NumField() {
			if t.Field(i).Offset == f.offset && f.plan != nil {
				out = append(out, t.Field(i).Name)
				break
			}
		}
	}
	return out
}

// planAt follows the named fields from p (the plan of struct type t), through
// pointers and slices, and returns the plan and type reached (nil if the plan
// does not walk that field).
func planAt(p *quantityPlan, t reflect.Type, path ...string) (*quantityPlan, reflect.Type) {
	for _, name := range path {
		f, _ := t.FieldByName(name)
		var next *quantityPlan
		for _, pf := range p.fields {
			if pf.offset == f.Offset {
				next = pf.plan
			}
		}
		if next == nil {
			return nil, nil
		}
		p, t = next, f.Type
		for p.kind == stepPointer || p.kind == stepSlice {
			p, t = p.elem, t.Elem()
		}
	}
	return p, t
}

// The plan walks only what leads to a Quantity a Marshal modifies: nothing
// for kinds whose Quantities all sit in ResourceLists (Node) or that have
// none (ConfigMap, Secret, metadata-only objects); for a Pod, not its metadata nor its
// ResourceLists.
func TestQuantityPlanFollowsOnlyFieldsLeadingToQuantitiesInPlace(t *testing.T) {
	for _, ex := range []any{corev1.ConfigMap{}, corev1.Node{}, corev1.Secret{}, metav1.PartialObjectMetadata{}} {
		if p := quantityPlanOf(reflect.TypeOf(ex)); p != nil {
			t.Errorf("%T: has a plan, want none", ex)
		}
	}
	podT := reflect.TypeFor[corev1.Pod]()
	p := quantityPlanOf(podT)
	if p == nil {
		t.Fatal("Pod: no plan")
	}
	equalStrings(t, "Pod", planFields(p, podT), []string{"Spec", "Status"})
	equalStrings(t, "Container", planFields(planAt(p, podT, "Spec", "Containers")), []string{"Env"})
	equalStrings(t, "EmptyDirVolumeSource", planFields(planAt(p, podT, "Spec", "Volumes", "VolumeSource", "EmptyDir")),
		[]string{"SizeLimit"})
	if rp, _ := planAt(p, podT, "Spec", "Containers", "Resources"); rp != nil {
		t.Error("the plan walks a container's resources: ResourceLists are copied by Marshal")
	}
	if sp, st := planAt(p, podT, "Spec", "Volumes", "VolumeSource", "EmptyDir", "SizeLimit"); sp == nil || sp.kind != stepQuantity {
		t.Errorf("emptyDir sizeLimit: plan %+v of %v, want a Quantity", sp, st)
	}
}

// BenchmarkQuantityRestore measures what Encode adds to the generated Marshal:
// walking the object for the Quantities a Marshal may modify, saving them
// and putting them back.
func BenchmarkQuantityRestore(b *testing.B) {
	server := serverPod(1)
	withEmptyDir := server.DeepCopy()
	withEmptyDir.Spec.Volumes = append(withEmptyDir.Spec.Volumes, quantityPod("a", "p").Spec.Volumes...)
	for _, c := range []struct {
		name string
		obj  runtime.Object
	}{{"serverPod", server}, {"podWithEmptyDir", withEmptyDir}, {"hpa", quantityHPA("a", "h")}} {
		p := quantityPlanOf(reflect.TypeOf(c.obj).Elem())
		b.Run("obj="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			var saved []savedQuantity
			for b.Loop() {
				saved = p.save(reflect.ValueOf(c.obj).UnsafePointer(), saved[:0])
				for _, s := range saved {
					*s.at = s.was
				}
			}
		})
	}
}
