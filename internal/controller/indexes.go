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

package controller

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
)

const (
	// AppLabel is the pod label whose value names the App a pod belongs to. deltacache is told
	// to index it (cmd/main.go), so "pods with app=X in namespace N" is an index lookup.
	AppLabel = "app"

	// AppSelectorField is the field index on Apps that maps a pod's `app` label value back to
	// the Apps selecting it. It indexes App.EffectiveSelector(), so an App without
	// spec.selector is found by its name. Query it with client.MatchingFields.
	AppSelectorField = "spec.selector"
)

// AppSelectorIndexFunc returns the value indexed under AppSelectorField for an App.
func AppSelectorIndexFunc(obj client.Object) []string {
	app, ok := obj.(*demov1alpha1.App)
	if !ok {
		return nil
	}
	return []string{app.EffectiveSelector()}
}

// SetupIndexes registers the field indexes the App controller reads through. It follows
// controller-runtime's convention, so it works with any cache behind the Manager.
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &demov1alpha1.App{}, AppSelectorField, AppSelectorIndexFunc); err != nil {
		return fmt.Errorf("indexing %s of App: %w", AppSelectorField, err)
	}
	return nil
}
