package codec

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill"

	appv1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
)

var (
	_ storageCodec = (*Plan)(nil)
	_ interface {
		DecodeInto(data []byte, dst any) error
	} = (*Plan)(nil)
	_ interface {
		AppendLabels(dst []string, data []byte) ([]string, error)
	} = (*Plan)(nil)
)

func mustPlan(t testing.TB, example runtime.Object) *Plan {
	t.Helper()
	c, err := NewPlan(example)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// roundTrip encodes obj, checks that the encoding left obj as it was, and
// returns the decode (by Decode and by DecodeInto, which must agree).
func roundTrip(t testing.TB, c *Plan, obj runtime.Object) (any, []byte) {
	t.Helper()
	before := obj.DeepCopyObject()
	data, err := c.Encode(obj)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if !reflect.DeepEqual(obj, before) {
		t.Fatal("Encode modified its object")
	}
	got, err := c.Decode(data)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	into := reflect.New(reflect.TypeOf(obj).Elem()).Interface()
	if err := c.DecodeInto(data, into); err != nil {
		t.Fatalf("DecodeInto: %v", err)
	}
	if !reflect.DeepEqual(got, into) {
		t.Fatal("Decode and DecodeInto disagree")
	}
	again, err := c.Encode(got)
	if err != nil || !bytes.Equal(again, data) {
		t.Fatalf("re-encoding the decoded object gave other bytes (err %v)", err)
	}
	return got, data
}

func TestPlanRoundTripsTheServersApp(t *testing.T) {
	c := mustPlan(t, &appv1alpha1.App{})
	app := serverApp(t, 1)
	if loc := app.CreationTimestamp.Location(); loc != time.Local {
		t.Fatalf("a JSON-decoded metav1.Time is in %v, the codec expects Local", loc)
	}
	got, data := roundTrip(t, c, app)
	if !reflect.DeepEqual(got, app) {
		t.Fatalf("decoded App differs:\n got %#v\nwant %#v", got, app)
	}
	// The shared TypeMeta costs one byte; an App without one is stored with its own.
	if data[0] != pcTypeMetaShared {
		t.Fatalf("first byte %d, want the shared TypeMeta", data[0])
	}
	bare := app.DeepCopy()
	bare.TypeMeta = metav1.TypeMeta{}
	got, _ = roundTrip(t, c, bare)
	if !reflect.DeepEqual(got, bare) {
		t.Fatal("decoded App without TypeMeta differs")
	}
}

func TestPlanRoundTripsTheLargeType(t *testing.T) {
	c := mustPlan(t, &bigCRD{})
	big := serverBig(t)
	// What the JSON decode gives: nil kept apart from empty, a Time in Local.
	if big.Spec.Groups["b"] == nil || big.Spec.Groups["c"] != nil || big.Spec.Tags != nil || big.Spec.Ports == nil {
		t.Fatal("fixture: JSON decode did not keep nil and empty apart")
	}
	got, _ := roundTrip(t, c, big)
	if !reflect.DeepEqual(got, big) {
		t.Fatalf("decoded bigCRD differs:\n got %#v\nwant %#v", got, big)
	}
	g := got.(*bigCRD)
	if g.Spec.Groups["b"] == nil || g.Spec.Tags != nil || g.Spec.Ports == nil || g.Spec.Matrix[1] == nil || g.Spec.Matrix[2] != nil {
		t.Fatal("nil and empty not kept apart")
	}
}

// A Quantity decoded from JSON and one parsed from the same string are
// DeepEqual; the codec keeps the cached string a String call adds.
func TestPlanKeepsQuantitiesExactly(t *testing.T) {
	c := mustPlan(t, &bigCRD{})
	for _, s := range planQuantities {
		var fromJSON resource.Quantity
		must(t, fromJSON.UnmarshalJSON([]byte(`"`+s+`"`)))
		if parsed := resource.MustParse(s); !reflect.DeepEqual(fromJSON, parsed) {
			t.Fatalf("%s: JSON decode %#v, ParseQuantity %#v", s, fromJSON, parsed)
		}
		for _, cache := range []bool{false, true} {
			q := resource.MustParse(s)
			if cache {
				_ = q.String()
			}
			obj := &bigCRD{Spec: bigSpec{Limit: q, MaybeLimit: &q}}
			got, _ := roundTrip(t, c, obj)
			if !reflect.DeepEqual(got, obj) {
				t.Fatalf("%s (cached string %v): %#v, want %#v", s, cache, got.(*bigCRD).Spec.Limit, q)
			}
		}
	}
}

// Values the codec could not restore exactly are refused, so that the
// Indexer keeps their objects decoded.
func TestPlanEncodeRefusesWhatItCannotRestore(t *testing.T) {
	c := mustPlan(t, &bigCRD{})
	for _, tc := range []struct {
		name string
		obj  *bigCRD
		want error
	}{
		{"monotonic time", &bigCRD{Status: bigStatus{LastUpdate: metav1.Now()}}, errPCTime},
		{"fixed zone", &bigCRD{Status: bigStatus{LastUpdate: metav1.NewTime(time.Unix(5, 0).In(time.FixedZone("X", 3600)))}}, errPCTime},
		{"inf.Dec quantity", &bigCRD{Spec: bigSpec{Limit: resource.MustParse("123456789012345678901234567890")}}, errPCQuantity},
		{"RawExtension object", &bigCRD{Spec: bigSpec{Config: runtime.RawExtension{Object: &bigCRD{}}}}, errPCRawObject},
	} {
		if _, err := c.Encode(tc.obj); !errors.Is(err, tc.want) {
			t.Errorf("%s: Encode error %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := c.Encode(&appv1alpha1.App{}); err == nil {
		t.Error("Encode of another type succeeded")
	}
}

type withInterface struct {
	metav1.ObjectMeta
	Value any
}

type withUnexported struct {
	metav1.TypeMeta
	Name  string
	state int
}

func (w *withUnexported) DeepCopyObject() runtime.Object { return w }

func TestNewPlanRefusesTypesItCannotPlan(t *testing.T) {
	if _, err := NewPlan(&withUnexported{}); err == nil {
		t.Error("NewPlan accepted a type with an unexported field")
	}
	if _, err := pcRootOf(reflect.TypeFor[withInterface]()); err == nil {
		t.Error("the planner accepted an interface field")
	}
	if _, err := pcRootOf(reflect.TypeFor[struct{ C chan int }]()); err == nil {
		t.Error("the planner accepted a channel field")
	}
	// A type with protobuf code plans too (the benchmarks use the CRD type).
	if _, err := NewPlan(&apiextensionsv1.CustomResourceDefinition{}); err != nil {
		t.Errorf("NewPlan(CustomResourceDefinition): %v", err)
	}
}

func TestPlanAppendLabelsReadsTheLabelsFromTheBytes(t *testing.T) {
	c := mustPlan(t, &appv1alpha1.App{})
	app := serverApp(t, 2)
	data, err := c.Encode(app)
	must(t, err)
	got, err := c.AppendLabels([]string{"pre"}, data)
	must(t, err)
	equalStrings(t, "labels", got, []string{"pre", "app", "web", "team", "payments", "tier", "frontend"})

	bare := app.DeepCopy()
	bare.TypeMeta, bare.Labels = metav1.TypeMeta{Kind: "Other"}, nil
	data, err = c.Encode(bare)
	must(t, err)
	got, err = c.AppendLabels(nil, data)
	must(t, err)
	equalStrings(t, "no labels", got, nil)

	bare.TypeMeta, bare.Labels = metav1.TypeMeta{}, map[string]string{"only": "one"}
	data, err = c.Encode(bare)
	must(t, err)
	if data[0] != pcTypeMetaEmpty {
		t.Fatalf("first byte %d, want an empty TypeMeta", data[0])
	}
	got, err = c.AppendLabels(nil, data)
	must(t, err)
	equalStrings(t, "labels after an empty TypeMeta", got, []string{"only", "one"})

	if _, err := c.AppendLabels([]string{"x"}, data[:0]); err == nil {
		t.Error("AppendLabels of no bytes succeeded")
	}
	nometa := mustPlan(t, &withUnexportedFree{})
	if _, err := nometa.AppendLabels(nil, []byte{0}); !errors.Is(err, ErrNoLabels) {
		t.Errorf("AppendLabels of a type without ObjectMeta: %v, want ErrNoLabels", err)
	}
}

type withUnexportedFree struct {
	metav1.TypeMeta
	Name string
}

func (w *withUnexportedFree) DeepCopyObject() runtime.Object { return w }

// Two Apps decoded from the same bytes share nothing either may modify, and
// modifying one leaves the bytes as they were (doc.go's contract).
func TestPlanDecodedObjectsShareNothingModifiable(t *testing.T) {
	c := mustPlan(t, &bigCRD{})
	data, err := c.Encode(serverBig(t))
	must(t, err)
	original := bytes.Clone(data)
	a, err := c.Decode(data)
	must(t, err)
	b, err := c.Decode(data)
	must(t, err)

	p := a.(*bigCRD)
	p.Labels["app"] = "changed"
	p.Spec.Template.Args = append(p.Spec.Template.Args, "x")
	p.Spec.Template.Env["A"] = "changed"
	*p.Spec.Replicas = 99
	p.Spec.Groups["a"][0] = "changed"
	p.Spec.CABundle[0] = 'X'
	p.Spec.Config.Raw[0] = 'X'
	p.Spec.Values.Raw[0] = 'X'
	p.Spec.Tree.Children[0].Next.Name = "changed"
	p.Status.Conditions[0].LastTransitionTime = metav1.Unix(0, 0)
	p.Spec.Deadline.Time = time.Unix(0, 0)

	if !bytes.Equal(data, original) {
		t.Fatal("modifying a decoded object modified the bytes")
	}
	want, err := c.Decode(original)
	must(t, err)
	if !reflect.DeepEqual(b, want) {
		t.Fatal("modifying a decoded object modified another decoded from the same bytes")
	}
}

func TestPlanDecodeRejectsTruncatedAndTrailingBytes(t *testing.T) {
	c := mustPlan(t, &bigCRD{})
	data, err := c.Encode(serverBig(t))
	must(t, err)
	for n := range len(data) {
		if _, err := c.Decode(data[:n]); err == nil {
			t.Fatalf("Decode of the first %d of %d bytes succeeded", n, len(data))
		}
	}
	if _, err := c.Decode(append(bytes.Clone(data), 0)); !errors.Is(err, errPCTrailing) {
		t.Fatalf("Decode with a trailing byte: %v", err)
	}
}

// Randomly filled values of the large type and of App round-trip; the seed
// is printed so that a failure can be replayed.
func TestPlanRoundTripsRandomValues(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(uint64(seed), 0))
	big, app := mustPlan(t, &bigCRD{}), mustPlan(t, &appv1alpha1.App{})
	for i := range 300 {
		f := newPlanFiller(randfill.NewWithSeed(r.Int64()))
		var b bigCRD
		f.Fill(&b)
		got, _ := roundTrip(t, big, &b)
		if !reflect.DeepEqual(got, &b) {
			t.Fatalf("value %d (seed %d): bigCRD differs:\n got %#v\nwant %#v", i, seed, got, &b)
		}
		var a appv1alpha1.App
		f.Fill(&a)
		got, _ = roundTrip(t, app, &a)
		if !reflect.DeepEqual(got, &a) {
			t.Fatalf("value %d (seed %d): App differs", i, seed)
		}
	}
}

// FuzzPlanCodecRoundTrip fills a bigCRD from the fuzz bytes and checks that
// decode(encode(x)) is DeepEqual to x; it also decodes the fuzz bytes
// themselves, which must give an error or a value, never a panic.
func FuzzPlanCodecRoundTrip(f *testing.F) {
	c := mustPlan(f, &bigCRD{})
	f.Add([]byte{})
	f.Add([]byte("0123456789abcdefghijklmnopqrstuvwxyz"))
	if data, err := c.Encode(serverBig(f)); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, err := c.Decode(data); err == nil {
			// Whatever decodes must encode again.
			if _, err := c.Encode(got); err != nil && !errors.Is(err, errPCTime) {
				t.Fatalf("a decoded value does not encode: %v", err)
			}
		}
		_, _ = c.AppendLabels(nil, data)
		var b bigCRD
		newPlanFiller(randfill.NewFromGoFuzz(data)).Fill(&b)
		got, _ := roundTrip(t, c, &b)
		if !reflect.DeepEqual(got, &b) {
			t.Fatalf("decode(encode(x)) differs:\n got %#v\nwant %#v", got, &b)
		}
	})
}

// Codecs of one type built, encoding and decoding on many goroutines at once
// (plans are built once and published complete; the shared TypeMeta is set
// once): every decode equals its object. Run with -race.
func TestPlanIsSafeForConcurrentPlanningEncodingAndDecoding(t *testing.T) {
	type fresh struct {
		metav1.TypeMeta
		metav1.ObjectMeta
		Spec bigSpec
	}
	typ := reflect.TypeFor[fresh]()
	want := serverBig(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			root, err := pcRootOf(typ)
			if err != nil {
				errs <- err
				return
			}
			c := &Plan{root: root}
			for range 50 {
				obj := &fresh{TypeMeta: want.TypeMeta, ObjectMeta: want.ObjectMeta, Spec: want.Spec}
				data, err := c.Encode(obj)
				if err != nil {
					errs <- err
					return
				}
				got, err := c.Decode(data)
				if err != nil {
					errs <- err
					return
				}
				if !reflect.DeepEqual(got, obj) {
					errs <- errors.New("a concurrent decode differs from its object")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
