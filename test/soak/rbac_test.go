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

package soak

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cacheUser is the user the cache under test runs as: not an admin, it may only get,
// list and watch the soak's kinds, each through a ClusterRole and ClusterRoleBinding of
// its own ("soak-cache-<resource>"), so that one kind's permission can be revoked (the
// binding deleted) and restored (created again) while the others stay.
const cacheUser = "soak-cache"

// grantedKind is one kind the cache user may read.
type grantedKind struct {
	gvk      schema.GroupVersionKind
	resource string
}

var grantedKinds = []grantedKind{{podGVK, "pods"}, {cmGVK, "configmaps"}, {appGVK, "apps"}}

func (k grantedKind) name() string { return cacheUser + "-" + k.resource }

func (k grantedKind) binding() *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: k.name()},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: k.name()},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: cacheUser}},
	}
}

// grantAll creates every kind's ClusterRole and binding.
func grantAll(ctx context.Context, c client.Client) error {
	for _, k := range grantedKinds {
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: k.name()},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{k.gvk.Group}, Resources: []string{k.resource},
				Verbs: []string{"get", "list", "watch"}}},
		}
		if err := c.Create(ctx, role); err != nil {
			return err
		}
		if err := restore(ctx, c, k); err != nil {
			return err
		}
	}
	return nil
}

// grantSharding lets the cache user keep the ring's Leases in ringNamespace (get, list,
// create, update, delete) and follow the Namespaces (list, watch: namespace sharding),
// through a Role and a ClusterRole that the faults leave alone.
func grantSharding(ctx context.Context, c client.Client) error {
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: cacheUser}}
	name := cacheUser + "-sharding"
	for _, obj := range []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ringNamespace, Name: name},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
				Verbs: []string{"get", "list", "create", "update", "delete"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ringNamespace, Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: subjects},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"},
				Verbs: []string{"list", "watch"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: subjects},
	} {
		if err := c.Create(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// revoke deletes k's binding: the cache user's next list or watch of k is Forbidden.
func revoke(ctx context.Context, c client.Client, k grantedKind) error {
	return c.Delete(ctx, k.binding())
}

// restore creates k's binding again.
func restore(ctx context.Context, c client.Client, k grantedKind) error {
	err := c.Create(ctx, k.binding())
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
