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
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// gatedHandler blocks in its first call until release is closed.
type gatedHandler struct{ release chan struct{} }

func (h gatedHandler) OnAdd(any, bool)     { <-h.release }
func (h gatedHandler) OnUpdate(any, any)   {}
func (h gatedHandler) OnDelete(any)        {}
func (h gatedHandler) HandlerName() string { return "slow-configmap-controller" }

func TestEnvtestReadyzAndWaitForCacheSyncNameTheHandlerThatHoldsTheStartBack(t *testing.T) {
	requireEnv(t)
	ns := createNamespace(t, "slow-handler")
	const objects = 20
	for i := range objects {
		create(t, newConfigMap(ns, fmt.Sprintf("cm-%02d", i), nil, nil))
	}
	// The user may read configmaps, not secrets: the Secret informer never syncs.
	userName := fmt.Sprintf("configmap-reader-%d", time.Now().UnixNano())
	user, err := testEnv.AddUser(envtest.User{Name: userName}, nil)
	if err != nil {
		t.Fatal(err)
	}
	grantClusterRole(t, userName, userName, "", "configmaps", "list", "watch")

	log, lines := capturingLogger()
	c, err := dcache.NewWith(dcache.WithLogger(log), dcache.WithWaitThroughSyncErrors())(user.Config(),
		crcache.Options{Mapper: mapper, DefaultNamespaces: map[string]crcache.Config{ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	runCache(t, c)
	ctx := envCtx(t)
	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	gate := gatedHandler{release: make(chan struct{})}
	released := false
	release := func() {
		if !released {
			close(gate.release)
			released = true
		}
	}
	t.Cleanup(release)
	if _, err := inf.AddEventHandler(gate); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetInformer(ctx, &corev1.Secret{}, crcache.BlockUntilSynced(false)); err != nil {
		t.Fatal(err)
	}

	readyz := dcache.ReadyzCheck(c)
	handlerLine := fmt.Sprintf(`configmaps: event handler "slow-configmap-controller" not synced: 0 of %d initial objects delivered in `, objects)
	eventually(t, 10*time.Second, func() error {
		if err := readyz(nil); err == nil || !strings.Contains(err.Error(), handlerLine) {
			return fmt.Errorf("readyz = %v, want a line %q", err, handlerLine)
		}
		return nil
	})

	waitCtx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if c.WaitForCacheSync(waitCtx) {
		t.Fatal("WaitForCacheSync returned true with the Secret informer refused")
	}
	var held string
	for _, l := range lines() {
		if strings.Contains(l, `"msg"="WaitForCacheSync ended before the cache synced; held back by"`) {
			held = l
		}
	}
	// The logger quotes the strings of its lists.
	quoted := func(s string) string { return strings.ReplaceAll(s, `"`, `\"`) }
	for _, want := range []string{
		`"informersNotSynced"=["secrets (Secret.v1 in namespace ` + ns + `: list failed (Forbidden): `,
		quoted(`User "` + userName + `" cannot list resource "secrets"`),
		`"handlersNotSynced"=["` + quoted(handlerLine),
	} {
		if !strings.Contains(held, want) {
			t.Errorf("the WaitForCacheSync log line lacks %s:\n%s", want, held)
		}
	}
	release()
	eventually(t, 10*time.Second, func() error {
		if err := readyz(nil); err == nil || strings.Contains(err.Error(), "event handler") {
			return fmt.Errorf("readyz = %v, want only the Secret informer's line", err)
		}
		return nil
	})
}
