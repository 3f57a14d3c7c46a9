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

package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
)

// The e2e suite runs the manager binary as its own process against a real kube-apiserver and
// etcd (the binaries `make envtest` builds), authenticated as a user that holds only the
// ClusterRole controller-gen generated from the RBAC markers. `make test-e2e` builds the binary
// and sets MANAGER_BINARY; without it the suite builds one.

const managerUser = "deltacache-manager"

var (
	testEnv   *envtest.Environment
	cfg       *rest.Config
	k8sClient client.Client
	manager   *exec.Cmd
	logs      = &syncBuffer{}
	projDir   = filepath.Join("..", "..")
)

// syncBuffer collects the manager's output for assertions while copying it to GinkgoWriter.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, _ = GinkgoWriter.Write(p)
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "e2e suite")
}

var _ = BeforeSuite(func() {
	Expect(demov1alpha1.AddToScheme(scheme.Scheme)).To(Succeed())

	By("starting a control plane with the CRDs installed")
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(projDir, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())

	By("granting the manager's user the generated manager-role, and nothing else")
	roleYAML, err := os.ReadFile(filepath.Join(projDir, "config", "rbac", "role.yaml"))
	Expect(err).NotTo(HaveOccurred())
	var role rbacv1.ClusterRole
	Expect(yaml.Unmarshal(roleYAML, &role)).To(Succeed())
	Expect(k8sClient.Create(context.Background(), &role)).To(Succeed())
	Expect(k8sClient.Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deltacache-manager"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: managerUser}},
	})).To(Succeed())
	user, err := testEnv.AddUser(envtest.User{Name: managerUser}, nil)
	Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := user.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	kubeconfigPath := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(os.WriteFile(kubeconfigPath, kubeconfig, 0o600)).To(Succeed())

	binary := os.Getenv("MANAGER_BINARY")
	if binary == "" {
		By("building the manager")
		binary = filepath.Join(GinkgoT().TempDir(), "manager")
		build := exec.Command("go", "build", "-o", binary, "./cmd")
		build.Dir = projDir
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
	}

	By("starting the manager process")
	manager = exec.Command(binary, "--kubeconfig="+kubeconfigPath, "--local-control-plane=false",
		"--health-probe-bind-address=0", "--metrics-bind-address=0")
	manager.Stdout, manager.Stderr = logs, logs
	Expect(manager.Start()).To(Succeed())
})

var _ = AfterSuite(func() {
	if manager != nil && manager.Process != nil {
		By("stopping the manager with SIGTERM")
		Expect(manager.Process.Signal(syscall.SIGTERM)).To(Succeed())
		done := make(chan error, 1)
		go func() { done <- manager.Wait() }()
		select {
		case err := <-done:
			Expect(err).NotTo(HaveOccurred(), "the manager should exit cleanly on SIGTERM")
		case <-time.After(30 * time.Second):
			_ = manager.Process.Kill()
			Fail("the manager did not stop within 30s of SIGTERM")
		}
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})
