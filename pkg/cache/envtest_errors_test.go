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
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	dcache "github.com/deltacache/deltacache/pkg/cache"
	"github.com/deltacache/deltacache/pkg/informer"
)

// gadgetCRD is the CRD of gadgetGVK, which TestEnvtestKindWithoutCRD... installs
// mid-test. Its group is new on every run, so that no RESTMapper has seen it.
func gadgetCRD(gadgetGVK schema.GroupVersionKind) *apiextensionsv1.CustomResourceDefinition {
	crd := widgetCRD()
	crd.Name = "gadgets." + gadgetGVK.Group
	crd.Spec.Group = gadgetGVK.Group
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{
		Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList",
	}
	return crd
}

// assertNoKindMatch fails unless err is a *meta.NoKindMatchError for gvk.
func assertNoKindMatch(t *testing.T, what string, err error, gvk schema.GroupVersionKind) {
	t.Helper()
	var kindErr *meta.NoKindMatchError
	if !errors.As(err, &kindErr) || kindErr.GroupKind != gvk.GroupKind() || !meta.IsNoMatchError(err) {
		t.Errorf("%s: err = %v, want a *meta.NoKindMatchError for %v", what, err, gvk.GroupKind())
	}
}

func TestEnvtestKindWithoutCRDIsNoKindMatchUntilTheCRDIsInstalled(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "latecrd")
	gadgetGVK := schema.GroupVersionKind{Group: ns + ".deltacache.io", Version: "v1", Kind: "Gadget"}
	c := startEnvCache(t, crcache.Options{})
	ctx := envCtx(t)

	gadget := &unstructured.Unstructured{}
	gadget.SetGroupVersionKind(gadgetGVK)
	key := client.ObjectKey{Namespace: ns, Name: "g"}
	assertNoKindMatch(t, "Get", c.Get(ctx, key, gadget), gadgetGVK)
	gadgets := &unstructured.UnstructuredList{}
	gadgets.SetGroupVersionKind(gadgetGVK.GroupVersion().WithKind("GadgetList"))
	assertNoKindMatch(t, "List", c.List(ctx, gadgets), gadgetGVK)
	_, err := c.GetInformer(ctx, gadget, crcache.BlockUntilSynced(false))
	assertNoKindMatch(t, "GetInformer without blocking", err, gadgetGVK)
	_, err = c.GetInformerForKind(ctx, gadgetGVK, crcache.BlockUntilSynced(false))
	assertNoKindMatch(t, "GetInformerForKind without blocking", err, gadgetGVK)
	if ctx.Err() != nil {
		t.Fatal("the no-kind-match errors took until the context's deadline")
	}
	// A blocking GetInformer waits for the kind (see
	// TestEnvtestControllerStartedBeforeItsCRDReconcilesSoonAfterItIsInstalled)
	// and returns the NoKindMatch error when its context ends.
	short, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
	_, err = c.GetInformer(short, gadget)
	cancel()
	assertNoKindMatch(t, "GetInformer blocking until its context ended", err, gadgetGVK)
	// No informer was left behind to fail or to hold WaitForCacheSync up.
	if !c.WaitForCacheSync(ctx) {
		t.Error("WaitForCacheSync returned false after failed lookups of an unknown kind")
	}
	if errs := c.SyncErrors(); len(errs) != 0 {
		t.Errorf("SyncErrors() = %v, want empty", errs)
	}

	installOpts := envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{gadgetCRD(gadgetGVK)}}
	if _, err := envtest.InstallCRDs(cfg, installOpts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = envtest.UninstallCRDs(cfg, installOpts) })
	created := &unstructured.Unstructured{}
	created.SetGroupVersionKind(gadgetGVK)
	created.SetNamespace(ns)
	created.SetName("g")
	create(t, created)

	// The RESTMapper re-discovers the group on the next miss; the informer then starts.
	eventually(t, 15*time.Second, func() error { return c.Get(ctx, key, gadget) })
	if gadget.GetName() != "g" || gadget.GroupVersionKind() != gadgetGVK {
		t.Errorf("gadget = %s %v", gadget.GetName(), gadget.GroupVersionKind())
	}
	inf, err := c.GetInformer(ctx, gadget)
	if err != nil || !inf.HasSynced() {
		t.Fatalf("GetInformer after the CRD was installed: %v (synced %t)", err, err == nil && inf.HasSynced())
	}
}

func TestEnvtestForbiddenInformerFailsWaitForCacheSyncUntilRBACAllowsIt(t *testing.T) {
	requireEnv(t)
	userName := fmt.Sprintf("late-rbac-%d", time.Now().UnixNano())
	user, err := testEnv.AddUser(envtest.User{Name: userName}, nil)
	if err != nil {
		t.Fatal(err)
	}
	newCache := dcache.NewWith(
		dcache.WithBackoff(informer.Backoff{Initial: 50 * time.Millisecond, Max: 200 * time.Millisecond}))
	c, err := newCache(user.Config(), crcache.Options{Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	dc := c.(*dcache.Cache)
	runCache(t, dc)
	ctx := envCtx(t)
	gvkSecret := corev1.SchemeGroupVersion.WithKind("Secret")

	if _, err := dc.GetInformer(ctx, &corev1.Secret{}, crcache.BlockUntilSynced(false)); err != nil {
		t.Fatal(err)
	}
	if dc.WaitForCacheSync(ctx) {
		t.Fatal("WaitForCacheSync returned true for an informer the user may not list")
	}
	if ctx.Err() != nil {
		t.Fatal("WaitForCacheSync waited for its context")
	}
	syncErr := dc.SyncError(gvkSecret)
	if !apierrors.IsForbidden(syncErr) || !strings.Contains(syncErr.Error(), userName) {
		t.Fatalf("SyncError(Secret) = %v, want Forbidden naming %s", syncErr, userName)
	}
	if err := dc.List(ctx, &corev1.SecretList{}); !apierrors.IsForbidden(err) {
		t.Fatalf("List: %v, want Forbidden", err)
	}

	// Grant list/watch on secrets: the informer's next retry syncs.
	grantClusterRole(t, userName, userName, "", "secrets", "list", "watch")
	eventually(t, 20*time.Second, func() error { return dc.SyncError(gvkSecret) })
	if !dc.WaitForCacheSync(ctx) {
		t.Fatal("WaitForCacheSync returned false after RBAC allowed the list")
	}
	if errs := dc.SyncErrors(); len(errs) != 0 {
		t.Errorf("SyncErrors() = %v after sync, want empty", errs)
	}
	if err := dc.List(ctx, &corev1.SecretList{}); err != nil {
		t.Errorf("List after RBAC allowed it: %v", err)
	}
}
