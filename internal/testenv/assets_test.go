package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAssetsDirPrefersKubebuilderAssets(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "/opt/assets")
	if got := AssetsDir(t.TempDir()); got != "/opt/assets" {
		t.Fatalf("AssetsDir = %q, want /opt/assets", got)
	}
}

func TestAssetsDirFindsTheFirstBuildUnderBinK8s(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Setenv("DELTACACHE_CACHE_DIR", t.TempDir())
	root := t.TempDir()
	if got := AssetsDir(root); got != "" {
		t.Fatalf("AssetsDir without bin/k8s = %q, want \"\"", got)
	}
	empty := filepath.Join(root, "bin", "k8s", "1.36.0-linux-amd64")
	full := filepath.Join(root, "bin", "k8s", "1.37.2-linux-amd64")
	for _, dir := range []string{empty, full} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(full, "kube-apiserver"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := AssetsDir(root); got != full {
		t.Fatalf("AssetsDir = %q, want %q (the directory that holds a kube-apiserver)", got, full)
	}
}

func TestAssetsDirFallsBackToThePerMachineCache(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	cache := t.TempDir()
	t.Setenv("DELTACACHE_CACHE_DIR", cache)
	root := t.TempDir()
	if got := AssetsDir(root); got != "" {
		t.Fatalf("AssetsDir with an empty cache = %q, want \"\"", got)
	}
	build := filepath.Join(cache, "1.37.2-linux-amd64")
	if err := os.MkdirAll(build, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(build, "kube-apiserver"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := AssetsDir(root); got != build {
		t.Fatalf("AssetsDir = %q, want the cache's build %q (where hack/envtest-binaries.sh leaves it)", got, build)
	}
}
