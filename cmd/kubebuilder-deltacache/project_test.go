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

package main

import "testing"

func TestCheckProjectAcceptsAGoV4ProjectForEditAndAGoV4ChainForInit(t *testing.T) {
	universe := map[string]string{projectPath: readScaffold(t, projectPath)}
	// The chain kubebuilder sends for edit has this plugin in front, as if in the layout.
	if err := checkProject("edit", []string{pluginKey, goV4Key}, universe); err != nil {
		t.Errorf("edit of kubebuilder's go/v4 scaffold: %v", err)
	}
	if err := checkProject("init", initChain, nil); err != nil {
		t.Errorf("init with go/v4 first: %v", err)
	}
}

func TestUsesGrafanaFromPROJECTOrFromTheDashboardsInTheUniverse(t *testing.T) {
	recorded := map[string]any{"plugins": map[string]any{grafanaKey: map[string]any{}}}
	for name, tc := range map[string]struct {
		universe map[string]string
		config   map[string]any
		want     bool
	}{
		"neither":          {map[string]string{mainGoPath: ""}, map[string]any{"layout": []any{goV4Key}}, false},
		"recorded":         {nil, recorded, true},
		"dashboards there": {map[string]string{grafanaPresent: "{}"}, nil, true},
	} {
		if got := usesGrafana(tc.universe, tc.config); got != tc.want {
			t.Errorf("%s: usesGrafana = %v, want %v", name, got, tc.want)
		}
	}
}
