//go:build sharding

package sharding

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
)

// appConvergence lists the Apps (from the API server, not a cache) and returns the
// namespaces of those whose status does not yet show perNamespace pods for their
// current generation (status.pods and status.observedGeneration), and how many Apps
// there are. With minGeneration, an App whose generation is below its entry does not
// count as converged either (the touch has not landed).
func appConvergence(ctx context.Context, c client.Client, perNamespace int, minGeneration map[string]int64) (pending []string, total int, err error) {
	var apps demov1alpha1.AppList
	if err := c.List(ctx, &apps); err != nil {
		return nil, 0, err
	}
	for _, a := range apps.Items {
		ok := a.Status.ObservedGeneration == a.Generation && int(a.Status.Pods) == perNamespace &&
			a.Generation >= minGeneration[a.Namespace]
		if !ok {
			pending = append(pending, a.Namespace)
		}
	}
	slices.Sort(pending)
	return pending, len(apps.Items), nil
}

// convergedErr is appConvergence as an eventually condition over want Apps.
func convergedErr(ctx context.Context, c client.Client, want, perNamespace int, minGeneration map[string]int64) error {
	pending, total, err := appConvergence(ctx, c, perNamespace, minGeneration)
	switch {
	case err != nil:
		return err
	case total != want:
		return fmt.Errorf("%d Apps, want %d", total, want)
	case len(pending) > 0:
		return fmt.Errorf("%d of %d Apps not converged, e.g. %s", len(pending), total,
			strings.Join(pending[:min(5, len(pending))], ", "))
	}
	return nil
}

// touchApps sets spec.minReady of the App of each namespace to minReady (a spec change:
// the generation moves on) and returns each App's new generation.
func touchApps(ctx context.Context, c client.Client, namespaces []string, minReady int32) (map[string]int64, error) {
	var mu sync.Mutex
	gens := map[string]int64{}
	err := parallel(len(namespaces), func(i int) error {
		app := &demov1alpha1.App{}
		app.Namespace, app.Name = namespaces[i], appName
		patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"spec":{"minReady":%d}}`, minReady))
		if err := c.Patch(ctx, app, patch); err != nil {
			return err
		}
		mu.Lock()
		gens[app.Namespace] = app.Generation
		mu.Unlock()
		return nil
	})
	return gens, err
}
