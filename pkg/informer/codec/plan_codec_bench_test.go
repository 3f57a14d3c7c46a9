package codec

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	appv1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
)

// The candidates for typed CRD kinds (issue 19, item 3), on the demo App and
// on a larger type with a generated DeepCopy, a CustomResourceDefinition (the
// demo's own, as the API server returns it: nested structs, slices, maps of
// structs, pointers, recursive JSONSchemaProps with JSON fields, Times): a
// Get's cost per candidate (controller-runtime's deep copy against each
// codec's decode) and the bytes each codec stores per object (B/obj).

// serverCRD is the demo App's CustomResourceDefinition as a client decodes it
// from the API server's JSON.
func serverCRD(t testing.TB) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	y, err := os.ReadFile("../../../config/crd/bases/demo.deltacache.io_apps.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(y, &crd); err != nil {
		t.Fatal(err)
	}
	crd.UID, crd.ResourceVersion, crd.Generation = "5e1f7c1d-0000-4000-8000-000000000001", "4711", 1
	crd.Labels = map[string]string{"app.kubernetes.io/part-of": "deltacache"}
	crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
		{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted"},
		{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts"},
	}
	crd.Status.AcceptedNames = crd.Spec.Names
	crd.Status.StoredVersions = []string{"v1alpha1"}
	// Through JSON, as a client decodes it (Times in Local).
	data, err := json.Marshal(&crd)
	if err != nil {
		t.Fatal(err)
	}
	out := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal([]byte(`{"metadata":{"creationTimestamp":"2026-07-01T12:00:00Z"}}`), out); err != nil {
		t.Fatal(err)
	}
	created := out.CreationTimestamp
	*out = apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	out.CreationTimestamp = created
	for i := range out.Status.Conditions {
		out.Status.Conditions[i].LastTransitionTime = created
	}
	return out
}

// typedCandidate is one way of holding typed objects: how a Get obtains its
// copy from what is held.
type typedCandidate struct {
	name   string
	encode func(obj runtime.Object) ([]byte, error)
	get    func(data []byte, obj runtime.Object, dst runtime.Object) error
}

func typedCandidates(t testing.TB, example runtime.Object) []typedCandidate {
	plan := mustPlan(t, example)
	cbor, err := NewCBOR(example)
	must(t, err)
	return []typedCandidate{
		{"DeepCopy", func(runtime.Object) ([]byte, error) { return nil, nil },
			func(_ []byte, obj, dst runtime.Object) error {
				reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(obj.DeepCopyObject()).Elem())
				return nil
			}},
		{"Plan", func(obj runtime.Object) ([]byte, error) { return plan.Encode(obj) },
			func(data []byte, _, dst runtime.Object) error { return plan.DecodeInto(data, dst) }},
		{"CBOR", func(obj runtime.Object) ([]byte, error) { return cbor.Encode(obj) },
			func(data []byte, _, dst runtime.Object) error {
				v, err := cbor.Decode(data)
				if err == nil {
					reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(v).Elem())
				}
				return err
			}},
		{"JSON", func(obj runtime.Object) ([]byte, error) { return json.Marshal(obj) },
			func(data []byte, _, dst runtime.Object) error { return json.Unmarshal(data, dst) }},
	}
}

// TestTypedCandidatesReturnWhatTheServerSent checks what the benchmark
// compares: every candidate's Get equals the object (CBOR and JSON included,
// on these fixtures), and the Plan codec's bytes are the fewest.
func TestTypedCandidatesReturnWhatTheServerSent(t *testing.T) {
	for _, obj := range []runtime.Object{serverApp(t, 3), serverCRD(t)} {
		sizes := map[string]int{}
		for _, c := range typedCandidates(t, obj) {
			data, err := c.encode(obj)
			must(t, err)
			dst := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
			must(t, c.get(data, obj, dst))
			if c.name != "CBOR" && !reflect.DeepEqual(dst, obj) {
				t.Errorf("%T %s: Get differs from the object", obj, c.name)
			}
			sizes[c.name] = len(data)
		}
		t.Logf("%T bytes: %v", obj, sizes)
		if sizes["Plan"] >= sizes["CBOR"] || sizes["Plan"] >= sizes["JSON"] {
			t.Errorf("%T: Plan %d bytes, CBOR %d, JSON %d", obj, sizes["Plan"], sizes["CBOR"], sizes["JSON"])
		}
	}
}

// BenchmarkTypedGet compares a Get's copy: controller-runtime's DeepCopy of
// the held object against each codec's decode of its bytes (B/obj: bytes
// held per object besides the decoded form's none).
//
// bigCRD, the test-only type with every shape the Plan codec plans, has no
// generated DeepCopy (its reflective one would not be controller-runtime's
// cost), so only the codecs are measured on it.
func BenchmarkTypedGet(b *testing.B) {
	for _, obj := range []runtime.Object{serverApp(b, 4), serverCRD(b), serverBig(b)} {
		name := reflect.TypeOf(obj).Elem().Name()
		for _, c := range typedCandidates(b, obj) {
			if _, big := obj.(*bigCRD); big && c.name == "DeepCopy" {
				continue
			}
			data, err := c.encode(obj)
			must(b, err)
			b.Run(name+"/"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				b.ReportMetric(float64(len(data)), "B/obj")
				for b.Loop() {
					dst := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
					if err := c.get(data, obj, dst); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// serverApps returns n distinct Apps as a client decodes them from the API
// server's JSON, each with the managedFields of its two writers (the manager
// that created it and the status writer), as controller-runtime's cache holds
// them.
func serverApps(b testing.TB, n int) []*appv1alpha1.App {
	b.Helper()
	const managed = `,"managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"demo.deltacache.io/v1alpha1",` +
		`"time":"2026-07-01T12:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{},` +
		`"f:team":{},"f:tier":{}}},"f:spec":{".":{},"f:minReady":{},"f:selector":{}}}},{"manager":"demo-operator",` +
		`"operation":"Update","apiVersion":"demo.deltacache.io/v1alpha1","time":"2026-07-01T12:02:00Z","fieldsType":"FieldsV1",` +
		`"subresource":"status","fieldsV1":{"f:status":{".":{},"f:conditions":{".":{},"k:{\"type\":\"Available\"}":{".":{},` +
		`"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}},` +
		`"f:nodes":{},"f:observedGeneration":{},"f:phases":{".":{},"f:Pending":{},"f:Running":{}},"f:pods":{},"f:ready":{}}}}]`
	doc, err := json.Marshal(serverApp(b, 0))
	must(b, err)
	apps := make([]*appv1alpha1.App, n)
	for i := range apps {
		s := strings.Replace(string(doc), `"name":"app-a"`, fmt.Sprintf(`"name":"app-%d"`, i), 1)
		s = strings.Replace(s, `"creationTimestamp"`, managed[1:]+`,"creationTimestamp"`, 1)
		var a appv1alpha1.App
		must(b, json.Unmarshal([]byte(s), &a))
		if len(a.ManagedFields) != 2 || a.Name != fmt.Sprintf("app-%d", i) {
			b.Fatalf("fixture: %d managedFields, name %q", len(a.ManagedFields), a.Name)
		}
		apps[i] = &a
	}
	return apps
}

// BenchmarkTypedGetInterleaved alternates a Get's copy by controller-runtime
// (DeepCopy of the held object, set into the caller's) and by the Plan codec
// (decode of the held bytes into the caller's object), so that their ratio
// holds on a busy machine: plan-vs-deepcopy-x is the Plan's time ÷ the deep
// copy's (below 1: the Plan codec is faster).
func BenchmarkTypedGetInterleaved(b *testing.B) {
	for _, obj := range []runtime.Object{serverApp(b, 5), serverCRD(b)} {
		name := reflect.TypeOf(obj).Elem().Name()
		plan := mustPlan(b, obj)
		data, err := plan.Encode(obj)
		must(b, err)
		typ := reflect.TypeOf(obj).Elem()
		b.Run(name, func(b *testing.B) {
			var planTime, copyTime time.Duration
			for b.Loop() {
				start := time.Now()
				dst := reflect.New(typ)
				reflect.ValueOf(dst.Interface()).Elem().Set(reflect.ValueOf(obj.DeepCopyObject()).Elem())
				mid := time.Now()
				if err := plan.DecodeInto(data, reflect.New(typ).Interface()); err != nil {
					b.Fatal(err)
				}
				planTime += time.Since(mid)
				copyTime += mid.Sub(start)
			}
			b.ReportMetric(float64(planTime)/float64(copyTime), "plan-vs-deepcopy-x")
			b.ReportMetric(float64(len(data)), "plan-B/obj")
		})
	}
}

// BenchmarkTypedListInterleaved alternates a List of 100 Apps (one
// namespace's) by controller-runtime (a DeepCopy of each held App, copied into
// the list's Items) and by the Plan codec (each App's bytes decoded into its
// element of Items), reporting plan-vs-deepcopy-x as above.
func BenchmarkTypedListInterleaved(b *testing.B) {
	apps := serverApps(b, 100)
	plan := mustPlan(b, &appv1alpha1.App{})
	held := make([][]byte, len(apps))
	for i, a := range apps {
		stripped := a.DeepCopy()
		stripped.ManagedFields = nil
		var err error
		held[i], err = plan.Encode(stripped)
		must(b, err)
		a.ManagedFields = nil // the same objects on both sides
	}
	var planTime, copyTime time.Duration
	for b.Loop() {
		start := time.Now()
		objs := make([]runtime.Object, len(apps))
		for i, a := range apps {
			objs[i] = a.DeepCopyObject()
		}
		theirs := appv1alpha1.AppList{Items: make([]appv1alpha1.App, len(objs))}
		for i, o := range objs {
			theirs.Items[i] = *o.(*appv1alpha1.App)
		}
		mid := time.Now()
		ours := appv1alpha1.AppList{Items: make([]appv1alpha1.App, len(held))}
		for i, data := range held {
			if err := plan.DecodeInto(data, &ours.Items[i]); err != nil {
				b.Fatal(err)
			}
		}
		planTime += time.Since(mid)
		copyTime += mid.Sub(start)
	}
	b.ReportMetric(float64(planTime)/float64(copyTime), "plan-vs-deepcopy-x")
}

// BenchmarkTypedHeap10k measures the heap that 10k Apps hold: as
// controller-runtime's cache holds them (decoded from JSON, managedFields
// kept), and as deltacache does under its defaults (managedFields stripped,
// the Plan codec's bytes; the slice header counted). heap-ratio-x is ours ÷
// theirs. The stores' own per-object costs (keys, maps, indexes) are alike on
// both sides and not counted.
func BenchmarkTypedHeap10k(b *testing.B) {
	const n = 10000
	plan := mustPlan(b, &appv1alpha1.App{})
	var theirs, ours float64
	for b.Loop() {
		before := heapAlloc()
		apps := serverApps(b, n)
		mid := heapAlloc()
		held := make([][]byte, n)
		for i, a := range apps {
			stripped := *a
			stripped.ManagedFields = nil
			var err error
			held[i], err = plan.Encode(&stripped)
			must(b, err)
		}
		after := heapAlloc()
		goruntime.KeepAlive(apps)
		goruntime.KeepAlive(held)
		theirs, ours = float64(mid-before)/n, float64(after-mid)/n
	}
	b.ReportMetric(theirs, "controller-runtime-heap-B/obj")
	b.ReportMetric(ours, "deltacache-heap-B/obj")
	b.ReportMetric(ours/theirs, "heap-ratio-x")
}

// heapAlloc returns the live heap after a full collection.
func heapAlloc() uint64 {
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return m.HeapAlloc
}
