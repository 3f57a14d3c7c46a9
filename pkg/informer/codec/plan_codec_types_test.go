package codec

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"

	appv1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
)

// bigCRD is a test-only CRD type larger than the demo App, with every shape
// the Plan codec plans: nested structs, slices of structs and of pointers,
// maps of slices and with non-string keys, pointers to structs and scalars,
// Quantities, Times, RawExtension, JSON, IntOrString, []byte, arrays and a
// recursive type.
type bigCRD struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              bigSpec   `json:"spec,omitempty"`
	Status            bigStatus `json:"status,omitempty"`
}

// DeepCopyObject makes bigCRD a runtime.Object.
func (b *bigCRD) DeepCopyObject() runtime.Object {
	return deepClone(reflect.ValueOf(b)).Interface().(*bigCRD)
}

// deepClone returns a deep copy of v: what a generated DeepCopy does, by
// reflection (the unexported fields of Time and Quantity copied by value).
func deepClone(v reflect.Value) reflect.Value {
	t := v.Type()
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return reflect.Zero(t)
		}
		if v.Kind() == reflect.Interface {
			n := reflect.New(t).Elem()
			n.Set(deepClone(v.Elem()))
			return n
		}
		n := reflect.New(t.Elem())
		n.Elem().Set(deepClone(v.Elem()))
		return n
	case reflect.Slice:
		if v.IsNil() {
			return reflect.Zero(t)
		}
		n := reflect.MakeSlice(t, v.Len(), v.Len())
		for i := range v.Len() {
			n.Index(i).Set(deepClone(v.Index(i)))
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return reflect.Zero(t)
		}
		n := reflect.MakeMapWithSize(t, v.Len())
		for it := v.MapRange(); it.Next(); {
			n.SetMapIndex(deepClone(it.Key()), deepClone(it.Value()))
		}
		return n
	case reflect.Struct:
		n := reflect.New(t).Elem()
		n.Set(v)
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				n.Field(i).Set(deepClone(v.Field(i)))
			}
		}
		return n
	case reflect.Array:
		n := reflect.New(t).Elem()
		for i := range v.Len() {
			n.Index(i).Set(deepClone(v.Index(i)))
		}
		return n
	}
	return v
}

type bigSpec struct {
	Replicas       *int32                          `json:"replicas,omitempty"`
	Paused         bool                            `json:"paused,omitempty"`
	Template       *bigTemplate                    `json:"template,omitempty"`
	Resources      map[string]resource.Quantity    `json:"resources,omitempty"`
	Limit          resource.Quantity               `json:"limit"`
	MaybeLimit     *resource.Quantity              `json:"maybeLimit,omitempty"`
	Ports          []bigPort                       `json:"ports"`
	Groups         map[string][]string             `json:"groups,omitempty"`
	Weights        map[int32]float64               `json:"weights,omitempty"`
	Config         runtime.RawExtension            `json:"config"`
	Values         *apiextensionsv1.JSON           `json:"values,omitempty"`
	Extra          []apiextensionsv1.JSON          `json:"extra,omitempty"`
	Target         intstr.IntOrString              `json:"target"`
	MaxUnavailable *intstr.IntOrString             `json:"maxUnavailable,omitempty"`
	CABundle       []byte                          `json:"caBundle,omitempty"`
	Timeout        *metav1.Duration                `json:"timeout,omitempty"`
	Deadline       *metav1.Time                    `json:"deadline,omitempty"`
	Schedule       [3]uint16                       `json:"schedule"`
	Ratio          float32                         `json:"ratio"`
	Tags           []string                        `json:"tags"`
	Selector       *metav1.LabelSelector           `json:"selector,omitempty"`
	Children       []*bigTemplate                  `json:"children,omitempty"`
	Matrix         [][]int64                       `json:"matrix,omitempty"`
	Flags          map[string]bool                 `json:"flags,omitempty"`
	Tree           *bigNode                        `json:"tree,omitempty"`
	Templates      map[string]*bigTemplate         `json:"templates,omitempty"`
	Schemas        map[string]apiextensionsv1.JSON `json:"schemas,omitempty"`
}

type bigTemplate struct {
	Image   string            `json:"image"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Limits  map[string]resource.Quantity
	Started metav1.Time `json:"started"`
	Port    *bigPort    `json:"port,omitempty"`
}

type bigPort struct {
	Name     string `json:"name"`
	Port     int32  `json:"port"`
	Protocol string `json:"protocol,omitempty"`
	Node     uint8  `json:"node,omitempty"`
	Weight   int8   `json:"weight,omitempty"`
}

type bigNode struct {
	Name     string    `json:"name"`
	Children []bigNode `json:"children,omitempty"`
	Next     *bigNode  `json:"next,omitempty"`
}

type bigStatus struct {
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	LastUpdate         metav1.Time        `json:"lastUpdate"`
	Probe              metav1.MicroTime   `json:"probe"`
	Counts             map[string]int64   `json:"counts,omitempty"`
	Phase              string             `json:"phase,omitempty"`
	Ready              *bool              `json:"ready,omitempty"`
	Bytes              uint64             `json:"bytes,omitempty"`
	Load               float64            `json:"load,omitempty"`
	Nodes              []string           `json:"nodes"`
}

// planQuantities are Quantities in the int64 form a server sends: canonical
// strings, some of which ParseQuantity caches (see quantity_restore_test.go).
var planQuantities = []string{"0", "100m", "1", "250m", "1Gi", "64Mi", "512Mi", "1500m", "2k", "1e3", "12345678901"}

// newPlanFiller returns a randfill.Filler for bigCRD and App values that the
// codec must round-trip: Times in UTC or Local without a monotonic reading
// (what JSON decoding gives is Local), Quantities parsed from a server's
// strings, RawExtensions with raw bytes only, no NaN.
func newPlanFiller(f *randfill.Filler) *randfill.Filler {
	return f.NilChance(0.2).NumElements(0, 3).MaxDepth(8).Funcs(
		func(t *time.Time, c randfill.Continue) {
			switch c.Intn(3) {
			case 0:
				*t = time.Time{}
			case 1:
				*t = time.Unix(c.Int63n(1<<34)-1<<33, c.Int63n(1e9)).UTC()
			default:
				*t = time.Unix(c.Int63n(1<<34), 0).Local()
			}
		},
		func(q *resource.Quantity, c randfill.Continue) {
			*q = resource.MustParse(planQuantities[c.Intn(len(planQuantities))])
			if c.Bool() {
				_ = q.String() // caches the canonical string
			}
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			r.Object = nil
			r.Raw = nil
			if c.Bool() {
				r.Raw = []byte(`{"k":` + c.String(5) + `}`)
			}
		},
		func(f *float64, c randfill.Continue) { *f = float64(c.Int63n(1e6)) / 7 },
		func(f *float32, c randfill.Continue) { *f = float32(c.Int63n(1e6)) / 3 },
	)
}

// serverApp is an App as a client decodes it from the API server's JSON.
func serverApp(t testing.TB, i int) *appv1alpha1.App {
	t.Helper()
	doc := `{"apiVersion":"apps.deltacache.io/v1alpha1","kind":"App","metadata":{"name":"app-` + string(rune('a'+i%26)) + `",` +
		`"namespace":"ns-1","uid":"8e4c1d2a-6f7b-4c3e-9a1d-2b3c4d5e6f70","resourceVersion":"123456","generation":3,` +
		`"creationTimestamp":"2026-07-01T12:00:00Z","labels":{"app":"web","tier":"frontend","team":"payments"},` +
		`"annotations":{"deltacache.io/owner":"platform"},"finalizers":["apps.deltacache.io/cleanup"]},` +
		`"spec":{"selector":"web","minReady":2},` +
		`"status":{"observedGeneration":3,"pods":5,"ready":4,"phases":{"Running":4,"Pending":1},"nodes":3,` +
		`"conditions":[{"type":"Available","status":"True","observedGeneration":3,"lastTransitionTime":"2026-07-01T12:01:00Z",` +
		`"reason":"MinReady","message":"4 of 5 pods ready"},{"type":"Progressing","status":"True","observedGeneration":3,` +
		`"lastTransitionTime":"2026-07-01T12:02:00Z","reason":"PodsNotReady","message":"1 pod not ready"}]}}`
	var a appv1alpha1.App
	if err := json.Unmarshal([]byte(doc), &a); err != nil {
		t.Fatal(err)
	}
	return &a
}

// serverBig is a bigCRD as a client decodes it from the API server's JSON.
func serverBig(t testing.TB) *bigCRD {
	t.Helper()
	doc := `{"apiVersion":"example.deltacache.io/v1","kind":"Big","metadata":{"name":"big","namespace":"ns-1",` +
		`"uid":"u-1","resourceVersion":"9","creationTimestamp":"2026-07-01T12:00:00Z","labels":{"app":"big"}},` +
		`"spec":{"replicas":3,"template":{"image":"img:1","args":[],"env":{"A":"1"},"Limits":{"cpu":"100m","memory":"64Mi"},` +
		`"started":"2026-07-01T12:00:00+02:00","port":{"name":"http","port":8080}},` +
		`"resources":{"cpu":"1500m","memory":"1Gi"},"limit":"2k","maybeLimit":"1e3","ports":[],` +
		`"groups":{"a":["x","y"],"b":[],"c":null},"weights":{"1":0.5,"-2":3},"config":{"nested":{"a":[1,2]}},` +
		`"values":{"x":1},"extra":[{"y":2},null],"target":"50%","maxUnavailable":1,"caBundle":"AAEC",` +
		`"timeout":"30s","deadline":"2026-08-01T00:00:00Z","schedule":[1,2,3],"ratio":0.25,"tags":null,` +
		`"selector":{"matchLabels":{"a":"b"},"matchExpressions":[{"key":"k","operator":"In","values":["v"]}]},` +
		`"children":[{"image":"c","started":null},null],"matrix":[[1,2],[],null],"flags":{"on":true},` +
		`"tree":{"name":"root","children":[{"name":"leaf","next":{"name":"n"}}]},` +
		`"templates":{"t":{"image":"t","started":"2026-07-01T12:00:00Z"},"nil":null},"schemas":{"s":{"type":"object"}}},` +
		`"status":{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-07-01T12:01:00Z","reason":"R","message":"m"}],` +
		`"observedGeneration":2,"lastUpdate":"2026-07-01T12:01:00Z","probe":"2026-07-01T12:01:00.123456Z",` +
		`"counts":{"a":1},"phase":"Running","ready":false,"bytes":18446744073709551615,"load":1.5,"nodes":[]}}`
	var b bigCRD
	if err := json.Unmarshal([]byte(doc), &b); err != nil {
		t.Fatal(err)
	}
	return &b
}
