//go:build sharding

package sharding

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
	"github.com/deltacache/deltacache/internal/testenv"
)

// projectRoot is the repository root from this package's directory.
var projectRoot = filepath.Join("..", "..")

// controlPlane is envtest's kube-apiserver and etcd with the App CRD installed, and a
// kubeconfig file for the managers (an admin user: the managers' RBAC is not what
// these tests are about).
type controlPlane struct {
	gate       bool // ShardedListAndWatch on
	cfg        *rest.Config
	client     client.Client // for the test's own writes and reads, QPS raised
	kubeconfig string
}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := demov1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// startControlPlane starts one, with the ShardedListAndWatch gate when gate is set, and
// stops it when the test ends.
func startControlPlane(t *testing.T, gate bool) *controlPlane {
	t.Helper()
	assets := testenv.AssetsDir(projectRoot)
	if assets == "" {
		t.Skip("no kube-apiserver and etcd: set KUBEBUILDER_ASSETS or run make envtest")
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(projectRoot, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	if gate {
		env.ControlPlane.GetAPIServer().Configure().Append("feature-gates", "ShardedListAndWatch=true")
	}
	start := time.Now()
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting the control plane (gate %v): %v", gate, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	t.Logf("control plane up in %v (ShardedListAndWatch=%v)", time.Since(start).Round(time.Millisecond), gate)

	admin, err := env.AddUser(envtest.User{Name: "sharding-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	fast := rest.CopyConfig(cfg)
	fast.QPS, fast.Burst = 5000, 10000
	c, err := client.New(fast, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &controlPlane{gate: gate, cfg: fast, client: c, kubeconfig: path}
}
