/*
Copyright 2026 The deltacache Authors.

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
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// replicaLogOptions returns, when SOAK_LOG names a directory, the option that
// logs replica id's cache (its informers, drift checks at V(1), and its ring) to
// <dir>/<id>.log with wall-clock times, to follow a failed run's hand-offs and
// drift; none otherwise (the caches then log to controller-runtime's log.Log,
// which the soak leaves unset).
func replicaLogOptions(t *testing.T, id string) []dcache.Option {
	dir := os.Getenv("SOAK_LOG")
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, id+".log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	t.Logf("replica %s logs to %s", id, path)
	var mu sync.Mutex
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(f, "%s %s %s\n", time.Now().Format("15:04:05.000"), prefix, args)
	}, funcr.Options{Verbosity: 1})
	return []dcache.Option{dcache.WithLogger(logr.Logger(log))}
}
