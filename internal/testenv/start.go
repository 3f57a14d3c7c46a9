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

package testenv

import (
	"context"
	"testing"
	"time"
)

// Cache is the part of controller-runtime's cache.Cache that StartCache uses.
type Cache interface {
	Start(ctx context.Context) error
	WaitForCacheSync(ctx context.Context) bool
}

// StartCache runs c.Start in a goroutine until the test ends and waits, up to timeout,
// until the informers existing now have synced; WaitForCacheSync returning false fails
// the test at once. At cleanup it cancels Start's context and fails the test if Start
// returns an error or does not return within timeout.
func StartCache(t testing.TB, c Cache, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Start returned %v", err)
			}
		case <-time.After(timeout):
			t.Errorf("Start did not return within %v after its context ended", timeout)
		}
	})
	syncCtx, syncCancel := context.WithTimeout(ctx, timeout)
	defer syncCancel()
	if !c.WaitForCacheSync(syncCtx) {
		t.Fatal("WaitForCacheSync returned false")
	}
}
