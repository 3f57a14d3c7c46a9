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

package cache_test

import (
	"fmt"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
	dcache "github.com/deltacache/deltacache/pkg/cache"
	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/informer/codec"
)

// A typed CRD kind (the demo App) under dcache.New's defaults is held by the
// Plan codec, and what the cache's Get and List return equals what the server
// returns by reflect.DeepEqual (Times, maps, nil and empty slices included),
// after create, status writes, update, delete and a relist.
func TestEnvtestTypedAppsUnderTheDefaultsArePlanEncodedAndEqualTheServers(t *testing.T) {
	requireEnv(t)
	installAppCRD(t)
	ns := createNamespace(t, "typedplan")
	ctx := envCtx(t)
	server, err := client.New(cfg, client.Options{Scheme: compactScheme()})
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, step int) {
		t.Helper()
		app := &demov1alpha1.App{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		err := server.Get(ctx, client.ObjectKeyFromObject(app), app)
		if err != nil {
			app.Labels = map[string]string{appLabel: name, "step": "created"}
			app.Spec = demov1alpha1.AppSpec{Selector: name, MinReady: 2}
			if err := server.Create(ctx, app); err != nil {
				t.Fatal(err)
			}
		} else {
			app.Labels["step"] = fmt.Sprintf("updated-%d", step)
			app.Annotations = map[string]string{"note": strings.Repeat("n", step*10)}
			app.Spec.MinReady = int32(step)
			if err := server.Update(ctx, app); err != nil {
				t.Fatal(err)
			}
		}
		app.Status = demov1alpha1.AppStatus{ObservedGeneration: app.Generation, Pods: int32(step + 2), Ready: int32(step),
			Phases: map[string]int32{"Running": int32(step), "Pending": 2}, Nodes: 1,
			Conditions: []metav1.Condition{{Type: "Available", Status: metav1.ConditionFalse, ObservedGeneration: app.Generation,
				LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second)), Reason: "NotEnoughReady",
				Message: fmt.Sprintf("%d of %d", step, step+2)}}}
		if step == 0 {
			app.Status.Phases, app.Status.Conditions = nil, nil
		}
		if err := server.Status().Update(ctx, app); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		write(fmt.Sprintf("o-%d", i), i)
	}

	expiring := &expiringTransport{}
	ecfg := rest.CopyConfig(cfg)
	ecfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { expiring.next = rt; return expiring }
	hc, err := rest.HTTPClientFor(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dcache.New(ecfg, crcache.Options{HTTPClient: hc, Mapper: mapper, Scheme: compactScheme()})
	if err != nil {
		t.Fatal(err)
	}
	runCache(t, c)
	check := func(what string) {
		t.Helper()
		eventually(t, 30*time.Second, func() error {
			if err := sameAppsAsServer(t, c, server, ns); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			return nil
		})
	}
	check("after the initial list")
	inf, err := c.GetInformer(ctx, &demov1alpha1.App{})
	if err != nil {
		t.Fatal(err)
	}
	indexer := inf.(*informer.SharedIndexInformer).Indexer()
	// The defaults are compact unless the environment sets another storage (make test
	// runs pkg/cache a second time with DELTACACHE_STORAGE=Decoded).
	defaultsCompact := os.Getenv("DELTACACHE_STORAGE") == ""
	compressed := os.Getenv("DELTACACHE_COMPRESSION") != "off"
	// Every App of the cluster (the cache watches all namespaces) is held as the
	// Plan codec's encoding of the server's object.
	plan, err := codec.NewPlan(&demov1alpha1.App{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		var all demov1alpha1.AppList
		if err := server.List(ctx, &all); err != nil {
			t.Fatal(err)
		}
		planBytes := 0
		for _, app := range normalizedApps(all.Items) {
			app.TypeMeta = metav1.TypeMeta{} // as the informer holds them
			data, err := plan.Encode(&app)
			if err != nil {
				t.Fatal(err)
			}
			planBytes += len(data)
			if compressed {
				// Compression on (the default): too few Apps for a dictionary, so
				// each record is its Plan encoding as it is, with the record's
				// dictionary byte and checksum.
				planBytes += 5
			}
		}
		n := int64(len(all.Items))
		stats := indexer.StoredStats()
		if !defaultsCompact {
			// make test's second pass (DELTACACHE_STORAGE=Decoded): the defaults hold
			// every kind decoded.
			if stats.Objects != n || stats.Encoded != 0 {
				return fmt.Errorf("stored %+v with DELTACACHE_STORAGE=Decoded, want %d objects, none encoded", stats, n)
			}
			return nil
		}
		if stats.Objects != n || stats.Encoded != n || stats.EncodedBytes != int64(planBytes) {
			return fmt.Errorf("stored %+v, want %d objects encoded in %d bytes", stats, n, planBytes)
		}
		return nil
	})

	for i := range 3 {
		write(fmt.Sprintf("o-%d", i), i+5)
	}
	for _, name := range []string{"o-3", "o-4"} {
		if err := server.Delete(ctx, &demov1alpha1.App{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	write("o-5", 1)
	check("after updates, deletes and a create")

	// A relist: every watch cut, and answered 410 Expired once.
	expiring.expire()
	if err := server.Delete(ctx, &demov1alpha1.App{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "o-0"}}); err != nil {
		t.Fatal(err)
	}
	write("o-6", 3)
	write("o-1", 9)
	check("after a relist")
	expiring.mu.Lock()
	relists := expiring.relists["/apis/demo.deltacache.io/v1alpha1/apps"]
	expiring.mu.Unlock()
	if relists == 0 {
		t.Error("no relist of the apps after the watches were cut")
	}
}

// sameAppsAsServer returns nil once the cache's List of the Apps of ns, and its
// Get of each, equal the server's List by reflect.DeepEqual (managedFields,
// which the cache strips, dropped; TypeMeta set on both sides).
func sameAppsAsServer(t *testing.T, c crcache.Cache, server client.Client, ns string) error {
	t.Helper()
	ctx := envCtx(t)
	var want, got demov1alpha1.AppList
	if err := server.List(ctx, &want, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &got, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	w, g := normalizedApps(want.Items), normalizedApps(got.Items)
	if len(w) != len(g) {
		return fmt.Errorf("cache has %d apps, server %d", len(g), len(w))
	}
	for i := range w {
		if !reflect.DeepEqual(w[i], g[i]) {
			return fmt.Errorf("List: app %s differs:\ncache  %#v\nserver %#v", w[i].Name, g[i], w[i])
		}
		var one demov1alpha1.App
		if err := c.Get(ctx, client.ObjectKeyFromObject(&w[i]), &one); err != nil {
			return err
		}
		if n := normalizedApps([]demov1alpha1.App{one}); !reflect.DeepEqual(w[i], n[0]) {
			return fmt.Errorf("Get: app %s differs:\ncache  %#v\nserver %#v", w[i].Name, n[0], w[i])
		}
	}
	return nil
}

func normalizedApps(items []demov1alpha1.App) []demov1alpha1.App {
	out := make([]demov1alpha1.App, len(items))
	for i := range items {
		out[i] = *items[i].DeepCopy()
		out[i].ManagedFields = nil
		out[i].SetGroupVersionKind(appGVK("App"))
	}
	slices.SortFunc(out, func(a, b demov1alpha1.App) int { return strings.Compare(a.Name, b.Name) })
	return out
}
