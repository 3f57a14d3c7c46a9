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

package devcluster

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
)

var testClient client.Client

// TestMain starts the control plane the way `make run` does, so StartControlPlane and Stop
// are exercised by every run of this package.
func TestMain(m *testing.M) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		if found, _ := filepath.Glob(filepath.Join("..", "..", "bin", "k8s", "*", "kube-apiserver")); len(found) > 0 {
			assets = filepath.Dir(found[0])
		}
	}
	cp, err := StartControlPlane(assets, filepath.Join("..", "..", "config", "crd", "bases"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testClient, err = client.New(cp.Config, client.Options{Scheme: newScheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func TestStartControlPlaneWithoutBinariesNamesWhatIsMissing(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	if _, err := StartControlPlane("", "unused"); err == nil || !bytes.Contains([]byte(err.Error()), []byte("make envtest")) {
		t.Fatalf("StartControlPlane without binaries: err = %v, want one that points at `make envtest`", err)
	}
	dir := t.TempDir()
	if _, err := StartControlPlane(dir, "unused"); err == nil || !bytes.Contains([]byte(err.Error()), []byte("kube-apiserver")) {
		t.Fatalf("StartControlPlane with an empty dir: err = %v, want one naming kube-apiserver", err)
	}
}

func TestLoadSamplesReadsTheThreeDemoApps(t *testing.T) {
	apps, err := LoadSamples(filepath.Join("..", "..", "config", "samples"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range apps {
		got = append(got, fmt.Sprintf("%s:%s:%d", a.Name, a.EffectiveSelector(), a.Spec.MinReady))
	}
	want := []string{"web:web:2", "api:api:1", "worker:batch:3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("samples = %v, want %v", got, want)
	}
}

func podsOf(t *testing.T, ns string) map[string]corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := testClient.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		out[p.Name] = p
	}
	return out
}

func TestSeedAndKubeletMovePodsToReady(t *testing.T) {
	ctx := context.Background()
	ns := "seed"
	if err := testClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	apps := []*demov1alpha1.App{
		{ObjectMeta: metav1.ObjectMeta{Name: "web"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "worker"}, Spec: demov1alpha1.AppSpec{Selector: "batch"}},
	}
	if _, err := SeedApps(ctx, testClient, ns, apps, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := SeedApps(ctx, testClient, ns, apps, 2); err != nil {
		t.Fatalf("seeding twice: %v", err)
	}
	pods := podsOf(t, ns)
	if len(pods) != 4 || pods["web-1"].Labels["app"] != "web" || pods["batch-0"].Labels["app"] != "batch" {
		t.Fatalf("seeded pods = %v, want web-0, web-1, batch-0, batch-1 labelled by selector", pods)
	}
	// A pod without the seeded label is never touched.
	if err := testClient.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "foreign", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}); err != nil {
		t.Fatal(err)
	}

	k := &Kubelet{Client: testClient, Nodes: []string{"n1", "n2"}, Rand: rand.New(rand.NewPCG(1, 1))}
	log := logr.Discard()

	if err := k.Tick(ctx, log); err != nil {
		t.Fatal(err)
	}
	nodes := map[string]int{}
	for name, p := range podsOf(t, ns) {
		if name == "foreign" {
			if p.Spec.NodeName != "" {
				t.Fatalf("foreign pod was bound to %q", p.Spec.NodeName)
			}
			continue
		}
		nodes[p.Spec.NodeName]++
	}
	if nodes["n1"] != 2 || nodes["n2"] != 2 {
		t.Fatalf("after one tick, pods per node = %v, want n1:2 n2:2", nodes)
	}

	if err := k.Tick(ctx, log); err != nil {
		t.Fatal(err)
	}
	for name, p := range podsOf(t, ns) {
		if name != "foreign" && (p.Status.Phase != corev1.PodRunning || podIsReady(&p)) {
			t.Fatalf("after two ticks %s is %s ready=%v, want Running and not ready", name, p.Status.Phase, podIsReady(&p))
		}
	}
	if err := k.Tick(ctx, log); err != nil {
		t.Fatal(err)
	}
	for name, p := range podsOf(t, ns) {
		if name != "foreign" && (p.Status.Phase != corev1.PodRunning || !podIsReady(&p)) {
			t.Fatalf("after three ticks %s is %s ready=%v, want Running and ready", name, p.Status.Phase, podIsReady(&p))
		}
	}

	// With chaos at 100%, every ready pod fails or is replaced; failed pods are replaced on
	// the next tick, so after two more ticks none of the original pods is left and the App
	// keeps its pod count.
	k.ChaosPercent = 100
	for range 2 {
		if err := k.Tick(ctx, log); err != nil {
			t.Fatal(err)
		}
	}
	after := podsOf(t, ns)
	perApp := map[string]int{}
	for name, p := range after {
		if name == "foreign" {
			continue
		}
		if p.DeletionTimestamp != nil {
			continue
		}
		perApp[p.Labels["app"]]++
		if name == "web-0" || name == "web-1" || name == "batch-0" || name == "batch-1" {
			t.Errorf("original pod %s survived two chaos ticks (phase %s)", name, p.Status.Phase)
		}
	}
	if perApp["web"] != 2 || perApp["batch"] != 2 {
		t.Fatalf("pods per app after chaos = %v, want web:2 batch:2", perApp)
	}
}

func TestWriteStatusTable(t *testing.T) {
	apps := []demov1alpha1.App{
		{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec:       demov1alpha1.AppSpec{MinReady: 2},
			Status: demov1alpha1.AppStatus{Pods: 3, Ready: 2, Nodes: 2, Phases: map[string]int32{"Running": 2, "Pending": 1},
				Conditions: []metav1.Condition{{Type: "Available", Status: metav1.ConditionTrue}}},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "api"},
			Spec:       demov1alpha1.AppSpec{Selector: "backend", MinReady: 1},
		},
	}
	var buf bytes.Buffer
	if err := WriteStatusTable(&buf, apps); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"NAMESPACE  APP  SELECTOR  READY  MIN-READY  PODS  PHASES               NODES  AVAILABLE\n" +
		"default    api  backend   0      1          0     -                    0      Unknown\n" +
		"default    web  web       2      2          3     Pending=1,Running=2  2      True\n"
	if buf.String() != want {
		t.Fatalf("table =\n%s\nwant\n%s", buf.String(), want)
	}
}
