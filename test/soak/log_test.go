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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	dcache "github.com/deltacache/deltacache/pkg/cache"
)

// The soak's test log says what the ring did, so that a double hold or an overlapping
// reconcile it reports can be matched with the hand-offs and fences around it: every
// replica's ring logs its events there (ringLogger: each change of the slots served, each
// fence, each failed round or consumer call, each withdrawal; a few lines a minute per
// replica), and each replica's cache its drift (replicaLogOptions).

// ringLogger returns the logger of instance's ring: its lines go to the test log with
// the wall-clock time and the instance ("ring 12:00:01.234 replica-1#4: ...").
func ringLogger(t *testing.T, instance string) logr.Logger {
	return funcr.New(func(_, args string) {
		t.Logf("ring %s %s: %s", time.Now().Format("15:04:05.000"), instance, args)
	}, funcr.Options{})
}

// driftMessage is the message of the consistency check's log line when it found drift
// (pkg/informer consistencyLoop).
const driftMessage = `"msg"="Cache drifted from the API server; relisting"`

// replicaLogOptions returns the logger option of instance's cache (of replica id): its
// drift lines go to the test log with the time and the instance, and onDrift (if not
// nil) is given the informer's kind and the drifted keys; when SOAK_LOG names a
// directory, every line it logs at V(1) or below goes to <dir>/<id>.log as well (one
// file per replica id, appended to by its restarts, each line naming the instance), with
// wall-clock times, to follow a failed run's hand-offs and drift.
func replicaLogOptions(t *testing.T, id, instance string, onDrift func(kind string, keys []string)) []dcache.Option {
	var (
		f         *os.File
		verbosity int
	)
	if dir := os.Getenv("SOAK_LOG"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, id+".log")
		var err error
		if f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		t.Logf("%s logs to %s", instance, path)
		verbosity = 1
	}
	var mu sync.Mutex
	log := funcr.New(func(prefix, args string) {
		now := time.Now().Format("15:04:05.000")
		if strings.Contains(args, driftMessage) {
			t.Logf("drift %s %s: %s %s", now, instance, prefix, args)
			if kind, keys := driftedKeys(args); onDrift != nil && len(keys) > 0 {
				onDrift(kind, keys)
			}
		}
		if f != nil {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(f, "%s %s %s %s\n", now, instance, prefix, args)
		}
	}, funcr.Options{Verbosity: verbosity})
	return []dcache.Option{dcache.WithLogger(log)}
}

// driftedKeys reads the kind of the informer ("ConfigMap" of "ConfigMap.v1 (metadata)")
// and the keys named (missing, extra and stale) of a drift line's key-values.
func driftedKeys(args string) (kind string, keys []string) {
	if _, rest, ok := strings.Cut(args, `"informer"="`); ok {
		kind, _, _ = strings.Cut(rest, ".")
	}
	for _, field := range []string{`"missingKeys"=[`, `"extraKeys"=[`, `"staleKeys"=[`} {
		_, rest, ok := strings.Cut(args, field)
		if !ok {
			continue
		}
		list, _, _ := strings.Cut(rest, "]")
		for _, q := range strings.Fields(list) {
			keys = append(keys, strings.Trim(q, `"`))
		}
	}
	return kind, keys
}

func TestDriftedKeysReadsTheKindAndEveryKeyOfADriftLine(t *testing.T) {
	line := `"level"=0 "msg"="Cache drifted from the API server; relisting" "informer"="ConfigMap.v1 (metadata)" ` +
		`"missing"=2 "extra"=0 "stale"=1 "missingKeys"=["soak-1/cm-36" "soak-6/cm-146"] "extraKeys"=[] ` +
		`"staleKeys"=["soak-0/cm-9"] "resourceVersion"="11467"`
	kind, keys := driftedKeys(line)
	if want := []string{"soak-1/cm-36", "soak-6/cm-146", "soak-0/cm-9"}; kind != "ConfigMap" || !slices.Equal(keys, want) {
		t.Fatalf("driftedKeys = %q, %q; want ConfigMap, %q", kind, keys, want)
	}
}
