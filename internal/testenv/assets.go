// Package testenv holds what the project's test suites share: finding the control plane
// binaries (kube-apiserver and etcd) that `make envtest` builds, starting a cache under
// test, capturing log lines and reading metric series.
package testenv

import (
	"os"
	"path/filepath"
)

// AssetsDir returns the directory holding kube-apiserver and etcd for envtest:
// $KUBEBUILDER_ASSETS when it is set, else the first directory under <root>/bin/k8s that
// holds a kube-apiserver (where older versions of hack/envtest-binaries.sh copied them),
// else the first such directory of the per-machine cache the script builds into
// ($DELTACACHE_CACHE_DIR, by default <user cache dir>/deltacache/envtest, one directory per
// version and platform), else "". root is the project root relative to the test's working
// directory, e.g. "../.." for a package two levels down.
func AssetsDir(root string) string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	if dir := firstBuild(filepath.Join(root, "bin", "k8s")); dir != "" {
		return dir
	}
	cache := os.Getenv("DELTACACHE_CACHE_DIR")
	if cache == "" {
		userCache, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		cache = filepath.Join(userCache, "deltacache", "envtest")
	}
	return firstBuild(cache)
}

// firstBuild returns the first directory under base that holds a kube-apiserver, or "".
func firstBuild(base string) string {
	entries, err := os.ReadDir(base)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		dir := filepath.Join(base, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "kube-apiserver")); e.IsDir() && err == nil {
			return dir
		}
	}
	return ""
}
