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
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/deltacache/deltacache/internal/testenv"
	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// capturingLogger returns a logger that keeps every line, and a function that lists
// them.
func capturingLogger() (logr.Logger, func() []string) {
	log, lines := testenv.CaptureLogs()
	return log, lines.All
}

// captureKlog routes klog's global logger (klog.Info & co., and klog.Background(),
// which client-go falls back to without a logger in the context) to a capturing
// logger until the test ends, and returns a function that lists what was logged.
func captureKlog(t *testing.T) func() []string {
	log, lines := capturingLogger()
	klog.SetLogger(log)
	t.Cleanup(klog.ClearLogger)
	return lines
}

func TestEnvtestReadyzFailsWithTheForbiddenErrorUntilRBACIsGranted(t *testing.T) {
	installSprockets(t)
	klogLines := captureKlog(t)
	user, err := testEnv.AddUser(envtest.User{Name: "sprocket-watcher"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cacheLog, cacheLines := capturingLogger()
	c, err := dcache.NewWith(dcache.WithLogger(cacheLog))(user.Config(), crcache.Options{Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	runCache(t, c)
	readyz, healthz := dcache.ReadyzCheck(c), dcache.HealthzCheck(c, time.Minute)
	ctx := envCtx(t)
	example := &unstructured.Unstructured{}
	example.SetGroupVersionKind(sprocketGVK)
	if _, err := c.GetInformer(ctx, example, crcache.BlockUntilSynced(false)); err != nil {
		t.Fatal(err)
	}

	eventually(t, 30*time.Second, func() error {
		err := readyz(nil)
		if err == nil || !strings.Contains(err.Error(), "is forbidden") {
			return fmt.Errorf("readyz = %v, want the Forbidden error", err)
		}
		return nil
	})
	msg := readyz(nil).Error()
	const want = "sprockets.obs.deltacache.io: forbidden: Sprocket.v1.obs.deltacache.io (unstructured): "
	if !strings.Contains(msg, want) {
		t.Errorf("readyz message lacks %q:\n%s", want, msg)
	}
	// The last attempt is either the WatchList stream or its fallback LIST, so the
	// server's message says "watch" or "list".
	denied := regexp.MustCompile(`User "sprocket-watcher" cannot (list|watch) resource "sprockets" ` +
		`in API group "obs.deltacache.io" at the cluster scope`)
	if !denied.MatchString(msg) {
		t.Errorf("readyz message lacks %q:\n%s", denied, msg)
	}
	if err := healthz(nil); err != nil {
		t.Errorf("healthz of an informer that never synced = %v, want nil (readiness covers it)", err)
	}

	// Never a flood: each failed attempt logs one error line with the reason and the
	// next delay, and at most one more (the WatchList stream's fallback to LIST).
	// The readyz check can see the failed attempt's error before its retry line is
	// logged: wait for that line first.
	var lines, retries []string
	eventually(t, 30*time.Second, func() error {
		lines, retries = cacheLines(), nil
		for _, l := range lines {
			if strings.Contains(l, `"msg"="list/watch failed; retrying"`) && strings.Contains(l, `"reason"="Forbidden"`) &&
				strings.Contains(l, `"retryIn"=`) {
				retries = append(retries, l)
			}
		}
		if len(retries) == 0 {
			return fmt.Errorf("no retry line yet in %d lines", len(lines))
		}
		return nil
	})
	if len(lines) > 2*len(retries)+1 {
		t.Errorf("%d lines for %d failed attempts:\n%s", len(lines), len(retries), strings.Join(lines, "\n"))
	}
	grantSprocketReader(t, "sprocket-watcher")
	eventually(t, 60*time.Second, func() error { return readyz(nil) })
	if err := healthz(nil); err != nil {
		t.Errorf("healthz after the sync = %v", err)
	}
	if lines := klogLines(); len(lines) > 0 {
		t.Errorf("klog lines on deltacache's path:\n%s", strings.Join(lines, "\n"))
	}
}

// grantSprocketReader lets user get, list and watch sprockets until the test ends, and
// returns the binding (see grantClusterRole).
func grantSprocketReader(t *testing.T, user string) *rbacv1.ClusterRoleBinding {
	t.Helper()
	return grantClusterRole(t, "sprocket-reader-"+user, user, sprocketGVK.Group, "sprockets", "get", "list", "watch")
}

// grantClusterRole binds user to a ClusterRole name allowing verbs on resource of
// apiGroup, until the test ends, and returns the binding (a test may delete and
// re-create it: the cleanup deletes it by name, and tolerates its absence).
func grantClusterRole(t *testing.T, name, user, apiGroup, resource string, verbs ...string) *rbacv1.ClusterRoleBinding {
	t.Helper()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{apiGroup}, Resources: []string{resource}, Verbs: verbs}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	create(t, role)
	create(t, binding)
	t.Cleanup(func() {
		ctx := context.Background()
		err := errors.Join(
			client.IgnoreNotFound(k8sClient.Delete(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}})),
			client.IgnoreNotFound(k8sClient.Delete(ctx, role)))
		if err != nil {
			t.Errorf("deleting the RBAC: %v", err)
		}
	})
	return binding.DeepCopy()
}
