//go:build sharding

package sharding

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
	"github.com/deltacache/deltacache/internal/controller"
)

// seedWorkers is how many creates are in flight at once.
const seedWorkers = 32

// parallel runs create(i) for i in [0, n) on seedWorkers goroutines, retrying an error
// that is not AlreadyExists up to three times; it returns the first error left.
func parallel(n int, create func(i int) error) error {
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range seedWorkers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				var err error
				for attempt := range 4 {
					if err = create(i); err == nil || apierrors.IsAlreadyExists(err) {
						err = nil
						break
					}
					time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
				}
				if err != nil {
					once.Do(func() { firstErr = fmt.Errorf("object %d: %w", i, err) })
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// clientset returns a protobuf clientset of cfg (cheaper to encode than JSON).
func clientset(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	pb := rest.CopyConfig(cfg)
	pb.ContentType = "application/vnd.kubernetes.protobuf"
	pb.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(pb)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// namespaceName is the i-th namespace of the workload. The names are fixed, so the
// split among replica-a, -b and -c (rendezvous hashing of the names' slots) is the same
// on every run.
func namespaceName(i int) string { return fmt.Sprintf("shard-ns-%03d", i) }

// appName is the name of every namespace's App; its pods carry app=appName.
const appName = "app"

// createNamespaces creates names.
func createNamespaces(cs kubernetes.Interface, names []string) error {
	return parallel(len(names), func(i int) error {
		_, err := cs.CoreV1().Namespaces().Create(context.Background(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names[i]}}, metav1.CreateOptions{})
		return err
	})
}

// createPods creates perNamespace pods labelled app=appName in each namespace.
func createPods(cs kubernetes.Interface, namespaces []string, perNamespace int) error {
	return parallel(len(namespaces)*perNamespace, func(i int) error {
		ns := namespaces[i/perNamespace]
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("pod-%04d", i%perNamespace),
				Labels: map[string]string{controller.AppLabel: appName}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
		}
		_, err := cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
		return err
	})
}

// createApps creates one App named appName, minReady 1, in each namespace.
func createApps(cp *controlPlane, namespaces []string) error {
	return parallel(len(namespaces), func(i int) error {
		app := &demov1alpha1.App{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespaces[i], Name: appName},
			Spec:       demov1alpha1.AppSpec{MinReady: 1},
		}
		return cp.client.Create(context.Background(), app)
	})
}

// createConfigMaps creates n ConfigMaps cm-NNNNN in ns.
func createConfigMaps(cs kubernetes.Interface, ns string, n int) error {
	return parallel(n, func(i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: configMapName(i)},
			Data: map[string]string{"i": fmt.Sprint(i)}}
		_, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
		return err
	})
}

func configMapName(i int) string { return fmt.Sprintf("cm-%05d", i) }

// seedTimed runs f and logs its rate.
func seedTimed(t *testing.T, what string, n int, f func() error) {
	t.Helper()
	start := time.Now()
	if err := f(); err != nil {
		t.Fatalf("creating %s: %v", what, err)
	}
	d := time.Since(start)
	t.Logf("created %d %s in %v (%.0f/s, %d workers)", n, what, d.Round(time.Millisecond),
		float64(n)/d.Seconds(), seedWorkers)
}
