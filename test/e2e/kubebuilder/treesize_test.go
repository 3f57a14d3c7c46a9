//go:build e2e

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

package kubebuilder

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// createAPIBound is how much longer `kubebuilder create api` may take in a project after its
// `make test` than in the same project without what make test left behind (bin/, cover.out):
// kubebuilder sends every file of the project to the plugin, so anything big that make test
// puts into the tree (the control plane once made it 94 s instead of 8.3 s) shows here.
func createAPIBound(clean time.Duration) time.Duration { return 2*clean + 10*time.Second }

// requireCreateAPIAsQuickAsOnACleanTree times `create api --kind Order` in dir right after
// make test, then in a copy of dir without bin/ and cover.out (with the same tools directory,
// so that only the tree differs), and fails when the first exceeds createAPIBound.
func requireCreateAPIAsQuickAsOnACleanTree(t *testing.T, dir string) {
	t.Helper()
	clean := filepath.Join(t.TempDir(), filepath.Base(dir))
	if out, err := exec.Command("cp", "-a", dir, clean).CombinedOutput(); err != nil {
		t.Fatalf("copying the project: %v\n%s", err, out)
	}
	for _, leftover := range []string{"bin", "cover.out"} {
		if err := os.RemoveAll(filepath.Join(clean, leftover)); err != nil {
			t.Fatal(err)
		}
	}
	localBin := strings.TrimSpace(mustRun(t, dir, "make", "-s", "--no-print-directory", "-f", "Makefile", "-f",
		writeTemp(t, "print.mk", "print-localbin:\n\t@echo $(LOCALBIN)\n"), "print-localbin"))
	args := []string{"create", "api", "--group", "shop", "--version", "v1", "--kind", "Order", "--resource", "--controller"}

	afterSize, cleanSize := treeSize(t, dir), treeSize(t, clean)
	start := time.Now()
	if res := run(t, dir, kubebuilderBin, args...); res.Err != nil {
		t.Fatalf("create api after make test: %v\n%s", res.Err, res.Output)
	}
	after := time.Since(start)
	start = time.Now()
	if res := runWithEnv(t, clean, []string{"LOCALBIN=" + localBin}, kubebuilderBin, args...); res.Err != nil {
		t.Fatalf("create api on a clean tree: %v\n%s", res.Err, res.Output)
	}
	cleanTime := time.Since(start)
	t.Logf("create api after make test: %s (tree %.1f MB); on a clean tree: %s (tree %.1f MB)",
		after.Round(100*time.Millisecond), float64(afterSize)/1e6, cleanTime.Round(100*time.Millisecond),
		float64(cleanSize)/1e6)
	if after > createAPIBound(cleanTime) {
		t.Errorf("create api took %s after make test, more than %s (2× the %s on a clean tree + 10s): "+
			"make test leaves too much in the project", after.Round(time.Second),
			createAPIBound(cleanTime).Round(time.Second), cleanTime.Round(time.Second))
	}
}

// treeSize is the number of bytes of the regular files under root (0 when it is missing),
// what kubebuilder reads into its request to the plugin.
func treeSize(t *testing.T, root string) int64 {
	t.Helper()
	var size int64
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if os.IsNotExist(err) && path == root {
			return filepath.SkipDir
		}
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			size += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return size
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
