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

// Package manifests checks the kustomize overlays under config/ against a real API server.
package manifests

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/deltacache/deltacache/internal/testenv"
)

// build renders a kustomize directory, as `kustomize build <dir>` does.
func build(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	objs := make([]*unstructured.Unstructured, 0, resources.Size())
	for _, r := range resources.Resources() {
		data, err := r.MarshalJSON()
		if err != nil {
			t.Fatalf("resource %s: %v", r.CurId(), err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil {
			t.Fatalf("resource %s: %v", r.CurId(), err)
		}
		objs = append(objs, obj)
	}
	return objs
}

func assetsDir(t *testing.T) string {
	dir := testenv.AssetsDir(filepath.Join("..", ".."))
	if dir == "" {
		t.Fatal("no kube-apiserver: run `make envtest` or set KUBEBUILDER_ASSETS")
	}
	return dir
}

func TestDefaultOverlayAppliesWithServerSideDryRun(t *testing.T) {
	objs := build(t, filepath.Join("..", "..", "config", "default"))

	got := make([]string, 0, len(objs))
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetName())
	}
	for _, want := range []string{
		"Namespace/deltacache-system",
		"CustomResourceDefinition/apps.demo.deltacache.io",
		"ServiceAccount/deltacache-controller-manager",
		"ClusterRole/deltacache-manager-role",
		"ClusterRoleBinding/deltacache-manager-rolebinding",
		"Role/deltacache-leader-election-role",
		"Service/deltacache-controller-manager-metrics-service",
		"Deployment/deltacache-controller-manager",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("kustomize build config/default lacks %s; it has %v", want, got)
		}
	}

	env := &envtest.Environment{BinaryAssetsDirectory: assetsDir(t)}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// A dry run does not create the namespace the other objects live in, so that one is
	// applied for real first; everything else is only validated and admitted by the server.
	for _, o := range objs {
		if o.GetKind() != "Namespace" {
			continue
		}
		ac := client.ApplyConfigurationFromUnstructured(o.DeepCopy())
		if err := c.Apply(ctx, ac, client.FieldOwner("deltacache-test")); err != nil {
			t.Fatalf("applying %s: %v", o.GetName(), err)
		}
	}
	for _, o := range objs {
		err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()),
			client.DryRunAll, client.FieldOwner("deltacache-test"), client.ForceOwnership)
		if err != nil {
			t.Errorf("server-side dry-run apply of %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

func TestManagerRoleGrantsExactlyWhatTheControllerUses(t *testing.T) {
	objs := build(t, filepath.Join("..", "..", "config", "rbac"))
	var role *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" && o.GetName() == "manager-role" {
			role = o
		}
	}
	if role == nil {
		t.Fatal("config/rbac has no ClusterRole manager-role")
	}
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	var got []string
	for _, r := range rules {
		m := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(m, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(m, "resources")
		verbs, _, _ := unstructured.NestedStringSlice(m, "verbs")
		slices.Sort(verbs)
		for _, g := range groups {
			for _, res := range resources {
				got = append(got, g+"|"+res+"|"+strings.Join(verbs, ","))
			}
		}
	}
	slices.Sort(got)
	want := []string{
		"demo.deltacache.io|apps/status|update",
		"demo.deltacache.io|apps|get,list,watch",
		"|pods|get,list,watch",
		// Sharding (--shard-identity): the ring reads and writes its Leases
		// (pkg/shard: list, get, create, update, delete; no watch), and
		// namespace sharding watches Namespaces (metadata only).
		"coordination.k8s.io|leases|create,delete,get,list,update",
		"|namespaces|list,watch",
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("manager-role rules (group|resource|verbs) = %q, want %q", got, want)
	}
}
