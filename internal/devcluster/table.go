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
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
)

// PrintStatusTable writes a table of the Apps (namespace, name, selector, ready, minReady, pods, phases,
// nodes, Available) to w every interval until ctx ends. It reads through c.
func PrintStatusTable(ctx context.Context, c client.Reader, w io.Writer, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		var apps demov1alpha1.AppList
		if err := c.List(ctx, &apps); err != nil {
			if ctx.Err() == nil {
				_, _ = fmt.Fprintf(w, "status table: %v\n", err)
			}
			continue
		}
		_ = WriteStatusTable(w, apps.Items)
	}
}

// WriteStatusTable writes one table of apps to w, sorted by namespace and name.
func WriteStatusTable(w io.Writer, apps []demov1alpha1.App) error {
	slices.SortFunc(apps, func(a, b demov1alpha1.App) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "NAMESPACE\tAPP\tSELECTOR\tREADY\tMIN-READY\tPODS\tPHASES\tNODES\tAVAILABLE")
	for i := range apps {
		a := &apps[i]
		available := "Unknown"
		if c := meta.FindStatusCondition(a.Status.Conditions, "Available"); c != nil {
			available = string(c.Status)
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%d\t%s\n", a.Namespace, a.Name, a.EffectiveSelector(),
			a.Status.Ready, a.Spec.MinReady, a.Status.Pods, formatPhases(a.Status.Phases), a.Status.Nodes, available)
	}
	return tw.Flush()
}

func formatPhases(phases map[string]int32) string {
	if len(phases) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(phases))
	for k := range phases {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, phases[k]))
	}
	return strings.Join(parts, ",")
}
