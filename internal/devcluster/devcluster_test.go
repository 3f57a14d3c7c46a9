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
	"github.com/deltacache/deltacache/internal/testenv"
)

// The two demo apps the seeded cluster runs, by their app label value.
const (
	webApp   = "web"
	batchApp = "batch"
)

var testClient client.Client

// TestMain starts the control plane the way `make run` does, so StartControlPlane and Stop
// are exercised by every run of this package.
func TestMain(m *testing.M) {
	assets := testenv.AssetsDir(filepath.Join("..", ".."))
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
	got := make([]string, 0, len(apps))
	for _, a := range apps {
		got = append(got, fmt.Sprintf("%s:%s:%d", a.Name, a.EffectiveSelector(), a.Spec.MinReady))
	}
	want := []string{"web:web:2", "api:api:1", "worker:batch:3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("samples = %v, want %v", got, want)
	}
}

const foreignPod = "foreign"

// seedNamespace is the namespace of one run of TestSeedAndKubeletMovePodsToReady; each
// run (go test -count=N) gets its own.
var (
	seedNamespace string
	seedRuns      int
)

// seededPodsByName returns the pods of seedNamespace by name.
func seededPodsByName(t *testing.T) map[string]corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := testClient.List(context.Background(), &pods, client.InNamespace(seedNamespace)); err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		out[p.Name] = p
	}
	return out
}

func tick(t *testing.T, k *Kubelet) {
	t.Helper()
	if err := k.Tick(context.Background(), logr.Discard()); err != nil {
		t.Fatal(err)
	}
}

// expectSeededPods fails unless check holds for every seeded pod (the foreign one excepted).
func expectSeededPods(t *testing.T, after string, check func(p *corev1.Pod) bool) {
	t.Helper()
	for name, p := range seededPodsByName(t) {
		if name != foreignPod && !check(&p) {
			t.Fatalf("after %s, %s is %s on %q ready=%v", after, name, p.Status.Phase, p.Spec.NodeName, podIsReady(&p))
		}
	}
}

func TestSeedAndKubeletMovePodsToReady(t *testing.T) {
	ctx := context.Background()
	seedRuns++
	seedNamespace = fmt.Sprintf("seed-%d", seedRuns)
	if err := testClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: seedNamespace}}); err != nil {
		t.Fatal(err)
	}
	apps := []*demov1alpha1.App{
		{ObjectMeta: metav1.ObjectMeta{Name: webApp}},
		{ObjectMeta: metav1.ObjectMeta{Name: "worker"}, Spec: demov1alpha1.AppSpec{Selector: batchApp}},
	}
	for range 2 { // seeding twice is harmless
		if _, err := SeedApps(ctx, testClient, seedNamespace, apps, 2); err != nil {
			t.Fatal(err)
		}
	}
	pods := seededPodsByName(t)
	if len(pods) != 4 || pods["web-1"].Labels["app"] != webApp || pods["batch-0"].Labels["app"] != batchApp {
		t.Fatalf("seeded pods = %v, want web-0, web-1, batch-0, batch-1 labelled by selector", pods)
	}
	// A pod without the seeded label is never touched.
	if err := testClient.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: seedNamespace, Name: foreignPod, Labels: map[string]string{"app": webApp}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}); err != nil {
		t.Fatal(err)
	}

	k := &Kubelet{Client: testClient, Nodes: []string{"n1", "n2"}, Rand: rand.New(rand.NewPCG(1, 1)), Namespace: seedNamespace}
	tick(t, k)
	nodes := map[string]int{}
	for name, p := range seededPodsByName(t) {
		if name != foreignPod {
			nodes[p.Spec.NodeName]++
		}
	}
	if want := map[string]int{"n1": 2, "n2": 2}; fmt.Sprint(nodes) != fmt.Sprint(want) {
		t.Fatalf("after one tick, pods per node = %v, want %v", nodes, want)
	}
	if foreign := seededPodsByName(t)[foreignPod]; foreign.Spec.NodeName != "" {
		t.Fatalf("the foreign pod was bound to %q", foreign.Spec.NodeName)
	}

	tick(t, k)
	expectSeededPods(t, "two ticks", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && !podIsReady(p) })
	tick(t, k)
	expectSeededPods(t, "three ticks", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && podIsReady(p) })

	// With chaos at 100%, every ready pod fails or is replaced; failed pods are replaced on
	// the next tick, so after two more ticks none of the original pods is left and each App
	// keeps its pod count.
	k.ChaosPercent = 100
	tick(t, k)
	tick(t, k)
	perApp := map[string]int{}
	for name, p := range seededPodsByName(t) {
		if name == foreignPod {
			continue
		}
		perApp[p.Labels["app"]]++
		if _, original := pods[name]; original {
			t.Errorf("original pod %s survived two chaos ticks (phase %s)", name, p.Status.Phase)
		}
	}
	if want := map[string]int{batchApp: 2, webApp: 2}; fmt.Sprint(perApp) != fmt.Sprint(want) {
		t.Fatalf("pods per app after chaos = %v, want %v", perApp, want)
	}
}

func TestWriteStatusTable(t *testing.T) {
	apps := []demov1alpha1.App{
		{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: webApp},
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
