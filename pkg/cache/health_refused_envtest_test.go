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
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	dcache "github.com/deltacache/deltacache/pkg/cache"
	"github.com/deltacache/deltacache/pkg/informer"
)

// The open watch keeps streaming after the binding is deleted (a watch is authorised
// when it is opened): WithMinWatchTimeout(1s) makes the server end each watch after
// 1–2 s, so the informer's next watch meets the refusal.
func TestEnvtestReadyzFailsNamingTheKindWhenASyncedInformerIsRefusedUntilRBACIsRestored(t *testing.T) {
	installSprockets(t)
	const userName = "sprocket-revoked"
	user, err := testEnv.AddUser(envtest.User{Name: userName}, nil)
	if err != nil {
		t.Fatal(err)
	}
	binding := grantSprocketReader(t, userName)
	c, err := dcache.NewWith(
		dcache.WithRefusedNotReadyAfter(2*time.Second),
		dcache.WithMinWatchTimeout(time.Second),
		dcache.WithBackoff(informer.Backoff{Initial: 50 * time.Millisecond, Max: 200 * time.Millisecond}),
	)(user.Config(), crcache.Options{Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	runCache(t, c)
	readyz, healthz := dcache.ReadyzCheck(c), dcache.HealthzCheck(c, time.Minute)
	ctx := envCtx(t)
	example := &unstructured.Unstructured{}
	example.SetGroupVersionKind(sprocketGVK)
	if _, err := c.GetInformer(ctx, example); err != nil {
		t.Fatal(err)
	}
	if err := readyz(nil); err != nil {
		t.Fatalf("readyz after the sync = %v", err)
	}

	revokedAt := time.Now()
	if err := k8sClient.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	const want = "sprockets.obs.deltacache.io: refused (forbidden) for "
	eventually(t, 30*time.Second, func() error {
		if err := readyz(nil); err == nil || !strings.Contains(err.Error(), want) {
			return fmt.Errorf("readyz = %v, want a line starting %q", err, want)
		}
		return nil
	})
	if d := time.Since(revokedAt); d < 2*time.Second {
		t.Errorf("readyz failed %s after the revocation, before the 2 s bound", d)
	}
	msg := readyz(nil).Error()
	for _, part := range []string{
		"Sprocket.v1.obs.deltacache.io (unstructured)",
		`User "` + userName + `" cannot`,
	} {
		if !strings.Contains(msg, part) {
			t.Errorf("readyz message lacks %q:\n%s", part, msg)
		}
	}
	if err := healthz(nil); err != nil {
		t.Errorf("healthz of a refused informer = %v, want nil (readiness covers it)", err)
	}
	// The refused informer still serves what it had.
	if err := c.List(ctx, &unstructured.UnstructuredList{Object: map[string]any{
		"apiVersion": sprocketGVK.GroupVersion().String(), "kind": "SprocketList"}}); err != nil {
		t.Errorf("List of the refused kind: %v", err)
	}

	binding.ResourceVersion = ""
	create(t, binding)
	eventually(t, 30*time.Second, func() error { return readyz(nil) })
}
