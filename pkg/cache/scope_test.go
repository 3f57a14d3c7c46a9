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
package cache

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func resolve(t *testing.T, opts crcache.Options) *scopeResolver {
	t.Helper()
	opts.Scheme = clientgoscheme.Scheme
	opts.Mapper = testMapper()
	r, err := newScopeResolver(opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func selString(s interface{ String() string }) string {
	if s == nil {
		return "<nil>"
	}
	return s.String()
}

func TestScopesWithoutOptionsAreOneUnrestrictedScopeWithControllerRuntimeDefaults(t *testing.T) {
	set := resolve(t, crcache.Options{}).scopesFor(gvkPod, true)
	if set.restricted || len(set.scopes) != 1 {
		t.Fatalf("got %+v", set)
	}
	s := set.scopes[0]
	if s.namespace != "" || s.label != nil || s.field != nil || s.unsafeDisableDeepCopy ||
		!s.enableWatchBookmarks || s.syncPeriod != 10*time.Hour {
		t.Errorf("scope = %+v", s)
	}
}

func TestScopesFollowByObjectThenDefaultNamespacesThenDefaults(t *testing.T) {
	byObjectLabel := labels.SelectorFromSet(labels.Set{"from": "byobject"})
	nsLabel := labels.SelectorFromSet(labels.Set{"from": "namespace"})
	defaultLabel := labels.SelectorFromSet(labels.Set{"from": defaultNamespace})
	defaultField := fields.OneTermEqualSelector("metadata.name", defaultNamespace)
	r := resolve(t, crcache.Options{
		DefaultLabelSelector:         defaultLabel,
		DefaultFieldSelector:         defaultField,
		DefaultUnsafeDisableDeepCopy: new(true),
		SyncPeriod:                   ptr.To(time.Minute),
		DefaultNamespaces: map[string]crcache.Config{
			"a": {LabelSelector: nsLabel},
			"b": {},
		},
		ByObject: map[client.Object]crcache.ByObject{
			&corev1.Pod{}: {Label: byObjectLabel, EnableWatchBookmarks: new(false)},
		},
	})

	pods := r.scopesFor(gvkPod, true)
	if !pods.restricted || len(pods.scopes) != 2 {
		t.Fatalf("pods: %+v", pods)
	}
	// As in controller-runtime, a nil ByObject.Namespaces is copied from
	// DefaultNamespaces, so a setting of DefaultNamespaces["a"] itself is more specific
	// than the type-level ByObject.Label; namespace b, without one, gets ByObject's.
	wantLabel := map[string]string{"a": "from=namespace", "b": "from=byobject"}
	for _, s := range pods.scopes {
		if s.namespace != s.key || selString(s.label) != wantLabel[s.key] || selString(s.field) != "metadata.name=default" ||
			s.enableWatchBookmarks || !s.unsafeDisableDeepCopy || s.syncPeriod != time.Minute {
			t.Errorf("pod scope %q = %+v", s.key, s)
		}
	}

	cms := r.scopesFor(gvkConfigMap, true)
	if !cms.restricted || len(cms.scopes) != 2 {
		t.Fatalf("config maps: %+v", cms)
	}
	if got := selString(cms.scopes[0].label); cms.scopes[0].key != "a" || got != "from=namespace" {
		t.Errorf("config maps in a: key %q label %s", cms.scopes[0].key, got)
	}
	if got := selString(cms.scopes[1].label); cms.scopes[1].key != "b" || got != "from=default" {
		t.Errorf("config maps in b: key %q label %s", cms.scopes[1].key, got)
	}
	if !cms.scopes[1].enableWatchBookmarks {
		t.Error("bookmarks should default to true")
	}

	nodes := r.scopesFor(gvkNode, false)
	if nodes.restricted || len(nodes.scopes) != 1 || nodes.scopes[0].namespace != "" ||
		selString(nodes.scopes[0].label) != "from=default" {
		t.Errorf("cluster-scoped kinds ignore DefaultNamespaces: %+v", nodes)
	}
}

func TestAllNamespacesScopeExcludesTheExplicitNamespaces(t *testing.T) {
	r := resolve(t, crcache.Options{DefaultNamespaces: map[string]crcache.Config{
		crcache.AllNamespaces: {FieldSelector: fields.OneTermEqualSelector("metadata.name", "x")},
		"a":                   {},
		"b":                   {},
	}})
	set := r.scopesFor(gvkConfigMap, true)
	keys := make([]string, 0, len(set.scopes))
	for _, s := range set.scopes {
		keys = append(keys, s.key)
	}
	if !slices.Equal(keys, []string{"", "a", "b"}) {
		t.Fatalf("scope keys = %q", keys)
	}
	all := set.scopes[0]
	if all.namespace != "" {
		t.Errorf("AllNamespaces scope is restricted to %q", all.namespace)
	}
	if got, want := selString(all.field), "metadata.namespace!=a,metadata.namespace!=b,metadata.name=x"; got != want {
		t.Errorf("AllNamespaces field selector = %q, want %q", got, want)
	}
	if set.scopes[1].field != nil && !set.scopes[1].field.Empty() {
		t.Errorf("namespace a got field selector %s", set.scopes[1].field)
	}
}

func TestExactNamespaceFieldSelectorRestrictsTheListWatchNamespace(t *testing.T) {
	r := resolve(t, crcache.Options{DefaultFieldSelector: fields.OneTermEqualSelector("metadata.namespace", "only")})
	s := r.scopesFor(gvkConfigMap, true).scopes[0]
	if s.namespace != "only" || s.key != "" {
		t.Errorf("scope = %+v", s)
	}
}

func TestByObjectWithEmptyNamespacesCachesAllNamespaces(t *testing.T) {
	r := resolve(t, crcache.Options{
		DefaultNamespaces: map[string]crcache.Config{"a": {}},
		ByObject:          map[client.Object]crcache.ByObject{&corev1.ConfigMap{}: {Namespaces: map[string]crcache.Config{}}},
	})
	set := r.scopesFor(gvkConfigMap, true)
	if set.restricted || len(set.scopes) != 1 || set.scopes[0].namespace != "" {
		t.Errorf("got %+v", set)
	}
	if pods := r.scopesFor(gvkPod, true); !pods.restricted || len(pods.scopes) != 1 || pods.scopes[0].namespace != "a" {
		t.Errorf("pods: %+v", pods)
	}
}

func TestByObjectNamespacesOnClusterScopedTypeIsAnError(t *testing.T) {
	_, err := newScopeResolver(crcache.Options{
		Scheme:   clientgoscheme.Scheme,
		Mapper:   testMapper(),
		ByObject: map[client.Object]crcache.ByObject{&corev1.Node{}: {Namespaces: map[string]crcache.Config{"a": {}}}},
	})
	if err == nil || !strings.Contains(err.Error(), "is not namespaced") {
		t.Errorf("err = %v", err)
	}
}

func TestJitterStaysWithinTenPercent(t *testing.T) {
	for range 1000 {
		got := jitter(10 * time.Hour)
		if got < 9*time.Hour || got >= 11*time.Hour {
			t.Fatalf("jitter(10h) = %v", got)
		}
	}
	if jitter(0) != 0 {
		t.Error("jitter(0) != 0")
	}
}
