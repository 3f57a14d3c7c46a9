package codec

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
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
func BenchmarkTypedGet(b *testing.B) {
	for _, obj := range []runtime.Object{serverApp(b, 4), serverCRD(b)} {
		name := reflect.TypeOf(obj).Elem().Name()
		for _, c := range typedCandidates(b, obj) {
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
