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
package cache_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// The conformance suite runs every case against controller-runtime's cache.New and
// deltacache's cache.New on the shared envtest control plane, with the same options
// and the same objects, and expects the same results. Where deltacache deliberately
// differs, the case says so in `differs` and checks each implementation's behaviour.
//
// Every deliberate difference (the README's "Differences from controller-runtime's
// cache" lists the same ones) and the test that pins it:
//   - a handler's pending notifications are merged per object, so a slow handler gets
//     one update from its last state to the newest rather than every step: pkg/informer
//     TestDifferentialBurstIsCoalescedOnlyByUs (against client-go's informer);
//   - a panicking handler is recovered unless WithCrashOnHandlerPanic:
//     TestCrashOnHandlerPanicCrashesTheProcessAsControllerRuntimes (a child process);
//   - managedFields are stripped from cached objects unless WithKeepManagedFields: the
//     case "managedFields are stripped" (and TestManagedFieldsAreStrippedByDefaultAndKeptOnRequest);
//   - typed objects handed to handlers and held in GetStore/GetIndexer have an empty
//     TypeMeta, as controller-runtime's, unless WithTypeMetaOnHandlerObjects: the case
//     "handler and store objects" (the same on both sides), and
//     TestTypedObjectsHaveAnEmptyTypeMetaUnlessTypeMetaOnHandlerObjects for the option;
//   - MatchingFields on a field without an index is an error whatever the data
//     (controller-runtime errs only when the first field's lookup finds objects): the
//     case "MatchingFields with an unindexed second field";
//   - WaitForCacheSync and blocking reads end early on errors retrying cannot fix
//     unless WithWaitThroughSyncErrors: the case "a Forbidden informer fails a blocking
//     read at once" (and sync_errors_test.go);
//   - a per-call UnsafeDisableDeepCopy(false) deep-copies under
//     DefaultUnsafeDisableDeepCopy: the case of that name;
//   - GetInformerForKind serves a kind missing from the Scheme as unstructured: the case
//     "GetInformerForKind of a kind missing from the Scheme".
//   - with compact storage, objects handed to handlers and returned with
//     UnsafeDisableDeepCopy are decoded for the caller, not the cache's own: the case
//     "per-call UnsafeDisableDeepCopy shares the cached object" (run with compact and
//     decoded storage) and TestUnsafeDisableDeepCopyReadsOfCompactStorageCannotCorruptTheCache;
//   - a blocking GetInformer of a kind not served yet waits for it:
//     TestEnvtestControllerStartedBeforeItsCRDReconcilesSoonAfterItIsInstalled.

const (
	implControllerRuntime = "controller-runtime"
	implDeltacache        = "deltacache"
	// implDeltacacheDecoded is deltacache with compact storage off.
	implDeltacacheDecoded = "deltacache-decoded"
)

var conformanceImpls = []struct {
	name string
	new  crcache.NewCacheFunc
}{
	{implControllerRuntime, crcache.New},
	{implDeltacache, dcache.NewWith(dcache.WithStorage(dcache.StorageCompact))},
	{implDeltacacheDecoded, dcache.NewWith(dcache.WithoutCompactStorage())},
}

// conformanceFixture is created once per run of TestConformance:
//
//	ns1: ConfigMaps a (app=web, tier=front), b (app=web, tier=back), c (app=db);
//	     Secrets s-web (app=web), s-db (app=db)
//	ns2: ConfigMaps d (app=web), e (app=db)
//	ns3: ConfigMap  f (app=web)
//
// Every ConfigMap has data.owner = owner, except c (owner "nobody"). Label values
// carry web and db, unique to the run, so that other tests' objects never match.
type conformanceFixture struct {
	ns1, ns2, ns3 string
	web, db       string
	owner         string
}

func (f *conformanceFixture) namespaces() []string { return []string{f.ns1, f.ns2, f.ns3} }

func newConformanceFixture(t *testing.T) *conformanceFixture {
	f := &conformanceFixture{ns1: createNamespace(t, "conf"), ns2: createNamespace(t, "conf"),
		ns3: createNamespace(t, "conf")}
	f.web, f.db, f.owner = "web-"+f.ns1, "db-"+f.ns1, "owner-"+f.ns1
	cm := func(ns, name string, lbls map[string]string, owner string) {
		create(t, newConfigMap(ns, name, lbls, map[string]string{"owner": owner}))
	}
	cm(f.ns1, "a", map[string]string{appLabel: f.web, "tier": "front"}, f.owner)
	cm(f.ns1, "b", map[string]string{appLabel: f.web, "tier": "back"}, f.owner)
	cm(f.ns1, "c", map[string]string{appLabel: f.db}, "nobody")
	cm(f.ns2, "d", map[string]string{appLabel: f.web}, f.owner)
	cm(f.ns2, "e", map[string]string{appLabel: f.db}, f.owner)
	cm(f.ns3, "f", map[string]string{appLabel: f.web}, f.owner)
	for name, app := range map[string]string{"s-web": f.web, "s-db": f.db} {
		create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns1, Name: name,
			Labels: map[string]string{appLabel: app}}})
	}
	return f
}

// conformanceEnv is what a case runs with.
type conformanceEnv struct {
	impl string
	// newCache is the implementation's constructor, for cases that build more caches.
	newCache crcache.NewCacheFunc
	c        crcache.Cache
	f        *conformanceFixture
	ctx      context.Context
}

type conformanceCase struct {
	name string
	// opts are the cache.Options of the case (HTTPClient and Mapper are filled in).
	opts func(f *conformanceFixture) crcache.Options
	// before runs before Start (e.g. IndexField); notStarted skips Start altogether.
	before     func(t *testing.T, e *conformanceEnv)
	notStarted bool
	// differs names a deliberate difference of deltacache's; run checks both sides.
	differs string
	run     func(t *testing.T, e *conformanceEnv)
}

func TestConformance(t *testing.T) {
	requireEnv(t)
	f := newConformanceFixture(t)
	for _, impl := range conformanceImpls {
		t.Run(impl.name, func(t *testing.T) {
			for _, tc := range conformanceCases() {
				t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
					if tc.differs != "" {
						t.Logf("deliberate difference: %s", tc.differs)
					}
					opts := crcache.Options{}
					if tc.opts != nil {
						opts = tc.opts(f)
					}
					opts.HTTPClient, opts.Mapper = httpClient, mapper
					c, err := impl.new(cfg, opts)
					if err != nil {
						t.Fatal(err)
					}
					e := &conformanceEnv{impl: impl.name, newCache: impl.new, c: c, f: f, ctx: envCtx(t)}
					if tc.before != nil {
						tc.before(t, e)
					}
					if !tc.notStarted {
						runCache(t, c)
					}
					tc.run(t, e)
				})
			}
		})
	}
}

// listKeys lists into list with opts and returns the sorted keys in the fixture's
// namespaces.
func (e *conformanceEnv) listKeys(t *testing.T, list client.ObjectList, opts ...client.ListOption) []string {
	t.Helper()
	if err := e.c.List(e.ctx, list, opts...); err != nil {
		t.Fatalf("List: %v", err)
	}
	return keysIn(t, list, e.f.namespaces()...)
}

func expectKeys(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

func mapPointer(m map[string]string) uintptr { return reflect.ValueOf(m).Pointer() }

func selector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func conformanceCases() []conformanceCase {
	cases := readCases()
	cases = append(cases, listOptionCases()...)
	cases = append(cases, indexCases()...)
	cases = append(cases, namespaceCases()...)
	cases = append(cases, lifecycleCases()...)
	return append(cases, differenceCases()...)
}

func readCases() []conformanceCase {
	return []conformanceCase{
		{name: "typed Get and List", run: func(t *testing.T, e *conformanceEnv) {
			var cm corev1.ConfigMap
			if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.f.ns1, Name: "a"}, &cm); err != nil {
				t.Fatal(err)
			}
			if cm.Data["owner"] != e.f.owner || cm.GroupVersionKind() != gvkConfigMap {
				t.Errorf("Get: data %v gvk %v", cm.Data, cm.GroupVersionKind())
			}
			expectKeys(t, "List in ns1", e.listKeys(t, &corev1.ConfigMapList{}, client.InNamespace(e.f.ns1)),
				e.f.ns1+"/a", e.f.ns1+"/b", e.f.ns1+"/c")
			err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.f.ns1, Name: "missing"}, &cm)
			var status apierrors.APIStatus
			if !apierrors.IsNotFound(err) || !errors.As(err, &status) || status.Status().Details.Kind != "ConfigMap" {
				t.Errorf("Get of a missing object: %v, want NotFound with the kind as resource", err)
			}
		}},
		{name: "unstructured Get and List", run: func(t *testing.T, e *conformanceEnv) {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvkConfigMap)
			if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.f.ns2, Name: "d"}, u); err != nil {
				t.Fatal(err)
			}
			owner, _, _ := unstructured.NestedString(u.Object, "data", "owner")
			if owner != e.f.owner || u.GroupVersionKind() != gvkConfigMap {
				t.Errorf("Get: owner %q gvk %v", owner, u.GroupVersionKind())
			}
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
			expectKeys(t, "List in ns2", e.listKeys(t, list, client.InNamespace(e.f.ns2)), e.f.ns2+"/d", e.f.ns2+"/e")
			for _, item := range list.Items {
				if item.GroupVersionKind() != gvkConfigMap {
					t.Errorf("item %s has gvk %v", item.GetName(), item.GroupVersionKind())
				}
			}
		}},
		{name: "metadata-only Get and List", run: func(t *testing.T, e *conformanceEnv) {
			m := &metav1.PartialObjectMetadata{}
			m.SetGroupVersionKind(gvkConfigMap)
			if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.f.ns1, Name: "b"}, m); err != nil {
				t.Fatal(err)
			}
			if m.Labels["tier"] != "back" || m.GroupVersionKind() != gvkConfigMap {
				t.Errorf("Get: labels %v gvk %v", m.Labels, m.GroupVersionKind())
			}
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
			expectKeys(t, "List in ns3", e.listKeys(t, list, client.InNamespace(e.f.ns3)), e.f.ns3+"/f")
			if list.Items[0].GroupVersionKind() != gvkConfigMap {
				t.Errorf("item gvk %v", list.Items[0].GroupVersionKind())
			}
		}},
		{name: "deep copy by default", run: func(t *testing.T, e *conformanceEnv) {
			key := client.ObjectKey{Namespace: e.f.ns1, Name: "a"}
			var first, second corev1.ConfigMap
			if err := e.c.Get(e.ctx, key, &first); err != nil {
				t.Fatal(err)
			}
			first.Data["owner"] = "mutated"
			if err := e.c.Get(e.ctx, key, &second); err != nil {
				t.Fatal(err)
			}
			if second.Data["owner"] != e.f.owner || mapPointer(first.Data) == mapPointer(second.Data) {
				t.Errorf("a caller's change reached the cache: %v", second.Data)
			}
		}},
		{name: "per-call UnsafeDisableDeepCopy shares the cached object",
			differs: "deltacache's compact storage gives every read an object of its own, also with UnsafeDisableDeepCopy",
			run: func(t *testing.T, e *conformanceEnv) {
				key := client.ObjectKey{Namespace: e.f.ns1, Name: "a"}
				var first, second corev1.ConfigMap
				for _, cm := range []*corev1.ConfigMap{&first, &second} {
					if err := e.c.Get(e.ctx, key, cm, client.UnsafeDisableDeepCopy); err != nil {
						t.Fatal(err)
					}
				}
				var list corev1.ConfigMapList
				if err := e.c.List(e.ctx, &list, client.InNamespace(e.f.ns1), client.MatchingLabels{"tier": "front"},
					client.UnsafeDisableDeepCopy); err != nil {
					t.Fatal(err)
				}
				if len(list.Items) != 1 {
					t.Fatalf("%d items, want 1", len(list.Items))
				}
				shared := mapPointer(first.Data) == mapPointer(second.Data) &&
					mapPointer(list.Items[0].Data) == mapPointer(first.Data)
				if want := e.impl != implDeltacache; shared != want {
					t.Errorf("reads with UnsafeDisableDeepCopy share the cached object: %t, want %t", shared, want)
				}
			}},
		{
			name:    "per-call UnsafeDisableDeepCopy(false) under DefaultUnsafeDisableDeepCopy",
			differs: "deltacache deep-copies when the call sets UnsafeDisableDeepCopy to false; controller-runtime ignores it",
			opts: func(*conformanceFixture) crcache.Options {
				return crcache.Options{DefaultUnsafeDisableDeepCopy: new(true)}
			},
			run: func(t *testing.T, e *conformanceEnv) {
				key := client.ObjectKey{Namespace: e.f.ns1, Name: "a"}
				var shared, asked corev1.ConfigMap
				if err := e.c.Get(e.ctx, key, &shared); err != nil {
					t.Fatal(err)
				}
				if err := e.c.Get(e.ctx, key, &asked, &client.GetOptions{UnsafeDisableDeepCopy: new(false)}); err != nil {
					t.Fatal(err)
				}
				wantShared := e.impl == implControllerRuntime
				if got := mapPointer(shared.Data) == mapPointer(asked.Data); got != wantShared {
					t.Errorf("shares the cached object: %t, want %t", got, wantShared)
				}
			},
		},
	}
}

// listOptionCases cover List options other than namespaces and field selectors.
func listOptionCases() []conformanceCase {
	return []conformanceCase{
		{name: "Limit", run: func(t *testing.T, e *conformanceEnv) {
			var list corev1.ConfigMapList
			if err := e.c.List(e.ctx, &list, client.InNamespace(e.f.ns1), client.Limit(2)); err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 2 || list.Continue != "continue-not-supported" {
				t.Errorf("Limit 2: %d items, continue %q", len(list.Items), list.Continue)
			}
		}},
		{name: "label selectors", run: func(t *testing.T, e *conformanceEnv) {
			f := e.f
			expectKeys(t, "MatchingLabels", e.listKeys(t, &corev1.ConfigMapList{}, client.MatchingLabels{appLabel: f.web}),
				f.ns1+"/a", f.ns1+"/b", f.ns2+"/d", f.ns3+"/f")
			expectKeys(t, "in, != in ns1",
				e.listKeys(t, &corev1.ConfigMapList{}, client.InNamespace(f.ns1),
					client.MatchingLabelsSelector{Selector: selector(t, "app in ("+f.web+","+f.db+"),tier!=back")}),
				f.ns1+"/a", f.ns1+"/c")
			expectKeys(t, "exists, notin",
				e.listKeys(t, &corev1.ConfigMapList{},
					client.MatchingLabelsSelector{Selector: selector(t, "tier,app notin ("+f.db+")")}),
				f.ns1+"/a", f.ns1+"/b")
		}},
		{name: "reused list object", run: func(t *testing.T, e *conformanceEnv) {
			var list corev1.ConfigMapList
			e.listKeys(t, &list, client.InNamespace(e.f.ns1))
			expectKeys(t, "second List into the same object", e.listKeys(t, &list, client.InNamespace(e.f.ns3)), e.f.ns3+"/f")
			if len(list.Items) != 1 {
				t.Errorf("%d items after the second List, want 1", len(list.Items))
			}
		}},
	}
}

func byOwner(obj client.Object) []string { return []string{obj.(*corev1.ConfigMap).Data["owner"]} }

func indexCases() []conformanceCase {
	indexOwner := func(t *testing.T, e *conformanceEnv) {
		if err := e.c.IndexField(e.ctx, &corev1.ConfigMap{}, "data.owner", byOwner); err != nil {
			t.Fatal(err)
		}
	}
	return []conformanceCase{
		{name: "MatchingFields exact", before: indexOwner, run: func(t *testing.T, e *conformanceEnv) {
			f := e.f
			expectKeys(t, "all namespaces", e.listKeys(t, &corev1.ConfigMapList{}, client.MatchingFields{"data.owner": f.owner}),
				f.ns1+"/a", f.ns1+"/b", f.ns2+"/d", f.ns2+"/e", f.ns3+"/f")
			expectKeys(t, "in ns1",
				e.listKeys(t, &corev1.ConfigMapList{}, client.InNamespace(f.ns1), client.MatchingFields{"data.owner": f.owner}),
				f.ns1+"/a", f.ns1+"/b")
			expectKeys(t, "with a label selector",
				e.listKeys(t, &corev1.ConfigMapList{}, client.MatchingFields{"data.owner": f.owner},
					client.MatchingLabels{appLabel: f.db}),
				f.ns2+"/e")
		}},
		{name: "field selector errors", before: indexOwner, run: func(t *testing.T, e *conformanceEnv) {
			list := &corev1.ConfigMapList{}
			err := e.c.List(e.ctx, list,
				client.MatchingFieldsSelector{Selector: fields.OneTermNotEqualSelector("data.owner", "x")})
			if err == nil || !strings.Contains(err.Error(), "non-exact field matches are not supported by the cache") {
				t.Errorf("non-exact selector: %v", err)
			}
			err = e.c.List(e.ctx, list, client.MatchingFields{"data.nope": "x"})
			if err == nil || !strings.Contains(strings.ToLower(err.Error()), "index with name field:data.nope does not exist") {
				t.Errorf("missing index: %v", err)
			}
			err = e.c.List(e.ctx, list, client.Continue("token"))
			if err == nil || err.Error() != "continue list option is not supported by the cache" {
				t.Errorf("Continue: %v", err)
			}
		}},
		{name: "IndexField after Start", run: func(t *testing.T, e *conformanceEnv) {
			e.listKeys(t, &corev1.ConfigMapList{}) // the informer runs
			byName := func(obj client.Object) []string { return []string{obj.GetName()} }
			if err := e.c.IndexField(e.ctx, &corev1.ConfigMap{}, "metadata.name", byName); err != nil {
				t.Fatal(err)
			}
			expectKeys(t, "back-filled index", e.listKeys(t, &corev1.ConfigMapList{}, client.InNamespace(e.f.ns1),
				client.MatchingFields{"metadata.name": "b"}), e.f.ns1+"/b")
		}},
	}
}

func namespaceCases() []conformanceCase {
	return []conformanceCase{
		{
			name: "cluster-scoped objects from a namespace-restricted cache",
			opts: func(f *conformanceFixture) crcache.Options {
				return crcache.Options{DefaultNamespaces: map[string]crcache.Config{f.ns1: {}}}
			},
			run: func(t *testing.T, e *conformanceEnv) {
				var ns corev1.Namespace
				if err := e.c.Get(e.ctx, client.ObjectKey{Name: e.f.ns2}, &ns); err != nil {
					t.Errorf("Get of namespace %s: %v", e.f.ns2, err)
				}
				var list corev1.NamespaceList
				if err := e.c.List(e.ctx, &list); err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, item := range list.Items {
					if slices.Contains(e.f.namespaces(), item.Name) {
						names = append(names, item.Name)
					}
				}
				slices.Sort(names)
				expectKeys(t, "namespaces", names, e.f.namespaces()...)
			},
		},
		{
			name: "DefaultNamespaces restrict Get and List",
			opts: func(f *conformanceFixture) crcache.Options {
				return crcache.Options{DefaultNamespaces: map[string]crcache.Config{f.ns1: {}, f.ns2: {}}}
			},
			run: func(t *testing.T, e *conformanceEnv) {
				f := e.f
				expectKeys(t, "List", e.listKeys(t, &corev1.ConfigMapList{}),
					f.ns1+"/a", f.ns1+"/b", f.ns1+"/c", f.ns2+"/d", f.ns2+"/e")
				if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: f.ns3, Name: "f"}, &corev1.ConfigMap{}); err == nil {
					t.Error("Get outside DefaultNamespaces succeeded")
				}
				if err := e.c.List(e.ctx, &corev1.ConfigMapList{}, client.InNamespace(f.ns3)); err == nil {
					t.Error("List outside DefaultNamespaces succeeded")
				}
			},
		},
		{
			name: "AllNamespaces entry and overlapping namespaces give no duplicates",
			opts: func(f *conformanceFixture) crcache.Options {
				return crcache.Options{DefaultNamespaces: map[string]crcache.Config{
					f.ns1:                 {LabelSelector: labels.SelectorFromSet(labels.Set{appLabel: f.web})},
					crcache.AllNamespaces: {},
				}}
			},
			run: func(t *testing.T, e *conformanceEnv) {
				f := e.f
				var list corev1.ConfigMapList
				expectKeys(t, "List", e.listKeys(t, &list),
					f.ns1+"/a", f.ns1+"/b", f.ns2+"/d", f.ns2+"/e", f.ns3+"/f")
				var cm corev1.ConfigMap
				if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: f.ns3, Name: "f"}, &cm); err != nil {
					t.Errorf("Get through the AllNamespaces entry: %v", err)
				}
				if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: f.ns1, Name: "c"}, &cm); !apierrors.IsNotFound(err) {
					t.Errorf("Get of an object ns1's selector excludes: %v, want NotFound", err)
				}
			},
		},
		{
			name: "ByObject takes precedence over the defaults",
			opts: func(f *conformanceFixture) crcache.Options {
				return crcache.Options{
					DefaultLabelSelector: labels.SelectorFromSet(labels.Set{appLabel: f.db}),
					DefaultNamespaces:    map[string]crcache.Config{f.ns1: {}},
					ByObject: map[client.Object]crcache.ByObject{&corev1.ConfigMap{}: {
						Label:      labels.SelectorFromSet(labels.Set{appLabel: f.web}),
						Namespaces: map[string]crcache.Config{f.ns1: {}, f.ns2: {}},
					}},
				}
			},
			run: func(t *testing.T, e *conformanceEnv) {
				f := e.f
				expectKeys(t, "ConfigMaps (ByObject)", e.listKeys(t, &corev1.ConfigMapList{}),
					f.ns1+"/a", f.ns1+"/b", f.ns2+"/d")
				expectKeys(t, "Secrets (defaults)", e.listKeys(t, &corev1.SecretList{}), f.ns1+"/s-db")
			},
		},
		{
			name: "label and field selectors filter on the server",
			opts: func(f *conformanceFixture) crcache.Options {
				return crcache.Options{
					DefaultLabelSelector: labels.SelectorFromSet(labels.Set{appLabel: f.web}),
					DefaultFieldSelector: fields.OneTermEqualSelector("metadata.namespace", f.ns1),
				}
			},
			run: func(t *testing.T, e *conformanceEnv) {
				f := e.f
				expectKeys(t, "List", e.listKeys(t, &corev1.ConfigMapList{}), f.ns1+"/a", f.ns1+"/b")
				err := e.c.Get(e.ctx, client.ObjectKey{Namespace: f.ns1, Name: "c"}, &corev1.ConfigMap{})
				if !apierrors.IsNotFound(err) {
					t.Errorf("Get of an object outside the selectors: %v, want NotFound", err)
				}
			},
		},
	}
}

func lifecycleCases() []conformanceCase {
	return []conformanceCase{
		{name: "ErrCacheNotStarted before Start", notStarted: true, run: func(t *testing.T, e *conformanceEnv) {
			var notStarted *crcache.ErrCacheNotStarted
			err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.f.ns1, Name: "a"}, &corev1.ConfigMap{})
			if !errors.As(err, &notStarted) {
				t.Errorf("Get: %v", err)
			}
			if err := e.c.List(e.ctx, &corev1.ConfigMapList{}); !errors.As(err, &notStarted) {
				t.Errorf("List: %v", err)
			}
		}},
		{name: "lazy informer blocks until synced", run: func(t *testing.T, e *conformanceEnv) {
			inf, err := e.c.GetInformer(e.ctx, &corev1.Secret{})
			if err != nil {
				t.Fatal(err)
			}
			if !inf.HasSynced() {
				t.Error("GetInformer returned an informer that has not synced")
			}
			var s corev1.Secret
			if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.f.ns1, Name: "s-web"}, &s); err != nil {
				t.Errorf("first Get of a new kind: %v", err)
			}
		}},
		{name: "RemoveInformer", run: func(t *testing.T, e *conformanceEnv) {
			inf, err := e.c.GetInformer(e.ctx, &corev1.ConfigMap{})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.c.RemoveInformer(e.ctx, &corev1.ConfigMap{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, func() error {
				if !inf.IsStopped() {
					return errors.New("removed informer still running")
				}
				return nil
			})
			expectKeys(t, "List after RemoveInformer", e.listKeys(t, &corev1.ConfigMapList{}, client.InNamespace(e.f.ns3)),
				e.f.ns3+"/f")
		}},
		{
			name: "ReaderFailOnMissingInformer",
			opts: func(*conformanceFixture) crcache.Options { return crcache.Options{ReaderFailOnMissingInformer: true} },
			run: func(t *testing.T, e *conformanceEnv) {
				var notCached *crcache.ErrResourceNotCached
				key := client.ObjectKey{Namespace: e.f.ns1, Name: "a"}
				if err := e.c.Get(e.ctx, key, &corev1.ConfigMap{}); !errors.As(err, &notCached) {
					t.Errorf("Get without informer: %v, want ErrResourceNotCached", err)
				}
				if _, err := e.c.GetInformer(e.ctx, &corev1.ConfigMap{}); err != nil {
					t.Fatal(err)
				}
				if err := e.c.Get(e.ctx, key, &corev1.ConfigMap{}); err != nil {
					t.Errorf("Get after GetInformer: %v", err)
				}
			},
		},
		{
			name:    "GetInformerForKind of a kind missing from the Scheme",
			differs: "deltacache returns an unstructured informer; controller-runtime fails (the kind is not registered)",
			run: func(t *testing.T, e *conformanceEnv) {
				inf, err := e.c.GetInformerForKind(e.ctx, widgetGVK)
				if e.impl == implControllerRuntime {
					if err == nil {
						t.Error("controller-runtime returned an informer for a kind missing from the Scheme")
					}
					return
				}
				if err != nil || !inf.HasSynced() {
					t.Errorf("GetInformerForKind: %v", err)
				}
			},
		},
		{name: "second Start fails", run: func(t *testing.T, e *conformanceEnv) {
			if err := e.c.Start(e.ctx); err == nil {
				t.Error("a second Start succeeded")
			}
		}},
	}
}

// kindsByObject records the kind of every object a handler or a store lookup is handed,
// by the object's Go type and key.
type kindsByObject struct {
	mu    sync.Mutex
	kinds map[string]string
}

func (k *kindsByObject) record(obj any) {
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kinds == nil {
		k.kinds = map[string]string{}
	}
	k.kinds[fmt.Sprintf("%T %s/%s", o, o.GetNamespace(), o.GetName())] = o.GetObjectKind().GroupVersionKind().Kind
}

func (k *kindsByObject) get(key string) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	kind, ok := k.kinds[key]
	return kind, ok
}

// differenceCases are the cases of the differences the README lists (and one that is
// no longer a difference: the TypeMeta of handler and store objects).
func differenceCases() []conformanceCase {
	return []conformanceCase{handlerAndStoreObjectsCase(), managedFieldsCase(), newInformerCase(),
		unindexedSecondFieldCase(), forbiddenInformerCase()}
}

func handlerAndStoreObjectsCase() conformanceCase {
	return conformanceCase{name: "handler and store objects", run: func(t *testing.T, e *conformanceEnv) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvkConfigMap)
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvkConfigMap)
		var handled, stored kindsByObject
		for _, example := range []client.Object{&corev1.ConfigMap{}, u, m} {
			inf, err := e.c.GetInformer(e.ctx, example)
			if err != nil {
				t.Fatal(err)
			}
			reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: handled.record})
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, func() error {
				if !reg.HasSynced() {
					return fmt.Errorf("%T handler not synced", example)
				}
				return nil
			})
			sii, ok := inf.(toolscache.SharedIndexInformer)
			if !ok {
				t.Fatalf("GetInformer(%T) returned a %T, not a SharedIndexInformer", example, inf)
			}
			item, exists, err := sii.GetStore().GetByKey(e.f.ns1 + "/a")
			if err != nil || !exists {
				t.Fatalf("GetStore().GetByKey of %T: exists %t, %v", example, exists, err)
			}
			stored.record(item)
		}
		a := e.f.ns1 + "/a"
		for _, tc := range []struct {
			key, want string
		}{
			{"*v1.ConfigMap " + a, ""},
			{"*unstructured.Unstructured " + a, "ConfigMap"},
			{"*v1.PartialObjectMetadata " + a, "ConfigMap"},
		} {
			if kind, ok := handled.get(tc.key); !ok || kind != tc.want {
				t.Errorf("handler's %s: seen %t, kind %q, want %q", tc.key, ok, kind, tc.want)
			}
			if kind, ok := stored.get(tc.key); !ok || kind != tc.want {
				t.Errorf("store's %s: seen %t, kind %q, want %q", tc.key, ok, kind, tc.want)
			}
		}
	}}
}

func managedFieldsCase() conformanceCase {
	return conformanceCase{
		name:    "managedFields are stripped",
		differs: "deltacache strips metadata.managedFields from cached objects unless WithKeepManagedFields",
		run: func(t *testing.T, e *conformanceEnv) {
			var cm corev1.ConfigMap
			if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.f.ns1, Name: "a"}, &cm); err != nil {
				t.Fatal(err)
			}
			if got, want := len(cm.ManagedFields) > 0, e.impl == implControllerRuntime; got != want {
				t.Errorf("Get returned %d managedFields entries; want some: %t", len(cm.ManagedFields), want)
			}
		},
	}
}

func newInformerCase() conformanceCase {
	return conformanceCase{
		name: "NewInformer builds the informer of a kind",
		opts: func(*conformanceFixture) crcache.Options {
			return crcache.Options{NewInformer: toolscache.NewSharedIndexInformer}
		},
		run: func(t *testing.T, e *conformanceEnv) {
			inf, err := e.c.GetInformer(e.ctx, &corev1.ConfigMap{})
			if err != nil {
				t.Fatal(err)
			}
			// controller-runtime hands out the informer NewInformer built.
			if _, ok := inf.(toolscache.SharedIndexInformer); !ok {
				t.Errorf("GetInformer returned a %T, want the client-go informer NewInformer built", inf)
			}
			var cm corev1.ConfigMap
			if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.f.ns1, Name: "a"}, &cm); err != nil {
				t.Fatal(err)
			}
			if cm.Data["owner"] != e.f.owner || cm.GroupVersionKind() != gvkConfigMap {
				t.Errorf("Get: data %v gvk %v", cm.Data, cm.GroupVersionKind())
			}
			expectKeys(t, "List app=web", e.listKeys(t, &corev1.ConfigMapList{}, client.MatchingLabels{appLabel: e.f.web}),
				e.f.ns1+"/a", e.f.ns1+"/b", e.f.ns2+"/d", e.f.ns3+"/f")
		},
	}
}

func unindexedSecondFieldCase() conformanceCase {
	return conformanceCase{
		name: "MatchingFields with an unindexed second field",
		differs: "deltacache fails every List whose field selector names a field without an index; " +
			"controller-runtime only when the first field's lookup finds objects",
		before: func(t *testing.T, e *conformanceEnv) {
			if err := e.c.IndexField(e.ctx, &corev1.ConfigMap{}, "data.owner", byOwner); err != nil {
				t.Fatal(err)
			}
		},
		run: func(t *testing.T, e *conformanceEnv) {
			listWithUnindexed := func(owner string) error {
				return e.c.List(e.ctx, &corev1.ConfigMapList{}, client.MatchingFieldsSelector{
					Selector: fields.AndSelectors(fields.OneTermEqualSelector("data.owner", owner),
						fields.OneTermEqualSelector("data.nope", "x"))})
			}
			for _, owner := range []string{e.f.owner, "no-such-owner"} {
				err := listWithUnindexed(owner)
				wantErr := e.impl != implControllerRuntime || owner == e.f.owner
				if (err != nil) != wantErr ||
					(err != nil && !strings.Contains(strings.ToLower(err.Error()), "field:data.nope does not exist")) {
					t.Errorf("owner %q: List error %v, want an error about field:data.nope: %t", owner, err, wantErr)
				}
			}
		},
	}
}

func forbiddenInformerCase() conformanceCase {
	return conformanceCase{
		name: "a Forbidden informer fails a blocking read at once",
		differs: "deltacache returns the Forbidden error of an informer that cannot list; " +
			"controller-runtime waits for the context (WithWaitThroughSyncErrors restores that)",
		notStarted: true,
		run: func(t *testing.T, e *conformanceEnv) {
			user, err := testEnv.AddUser(envtest.User{Name: "conformance-nobody-" + e.impl}, nil)
			if err != nil {
				t.Fatal(err)
			}
			c, err := e.newCache(user.Config(), crcache.Options{Mapper: mapper})
			if err != nil {
				t.Fatal(err)
			}
			runCache(t, c)
			ctx, cancel := context.WithTimeout(e.ctx, 3*time.Second)
			defer cancel()
			err = c.List(ctx, &corev1.SecretList{}, client.InNamespace(e.f.ns1))
			if e.impl == implControllerRuntime {
				if err == nil || apierrors.IsForbidden(err) || ctx.Err() == nil {
					t.Errorf("controller-runtime: List %v (context ended: %v), want a wait until the context ends",
						err, ctx.Err())
				}
				return
			}
			if !apierrors.IsForbidden(err) || ctx.Err() != nil {
				t.Errorf("List: %v (context ended: %v), want Forbidden before the context ends", err, ctx.Err())
			}
		},
	}
}
