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

package cache

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
)

// WithSnapshotInterval makes a running cache write its snapshots at that interval,
// not only at stop: the file appears, and is rewritten, while the cache runs.
func TestWithSnapshotIntervalWritesWhileTheCacheRuns(t *testing.T) {
	dir := t.TempDir()
	api := newFakeAPI(t, configMap("a", "x", nil))
	c := newTestCache(t, api, crcache.Options{}, WithSnapshots(dir), WithSnapshotInterval(50*time.Millisecond),
		WithStorage(StorageCompact)) // snapshots need it; make test's second pass turns the default off
	if _, err := c.GetInformer(testCtx(t), &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	startCache(t, c)
	path := filepath.Join(dir, "core_v1_ConfigMap_typed_all")
	var writes []time.Time
	deadline := time.Now().Add(5 * time.Second)
	for len(writes) < 2 && time.Now().Before(deadline) {
		if fi, err := os.Stat(path); err == nil && (len(writes) == 0 || fi.ModTime().After(writes[len(writes)-1])) {
			writes = append(writes, fi.ModTime())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(writes) < 2 {
		t.Fatalf("%s written %d times in 5 s while the cache ran (interval 50 ms), want at least 2", path, len(writes))
	}
}
