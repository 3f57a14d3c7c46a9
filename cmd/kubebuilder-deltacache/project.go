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

import (
	"slices"

	"sigs.k8s.io/yaml"
)

const (
	pluginName    = "deltacache.io"
	pluginVersion = "v1-alpha"
	pluginKey     = pluginName + "/" + pluginVersion

	projectPath    = "PROJECT"
	goV4Key        = "go.kubebuilder.io/v4"
	grafanaKey     = "grafana.kubebuilder.io/v1-alpha"
	grafanaPresent = "grafana/controller-runtime-metrics.json"
)

// checkProject refuses a project deltacache cannot be scaffolded into: for init, a plugin
// chain without go/v4; for edit, a PROJECT whose layout lacks go/v4 or already holds this
// plugin (the project was initialised with it). Edit reads the layout from the PROJECT file
// in the universe: the config kubebuilder sends has this plugin moved to the front of the
// layout for the duration of the call, whether it was there or not.
func checkProject(command string, chain []string, universe map[string]string) error {
	switch command {
	case "init":
		if !slices.Contains(chain, goV4Key) {
			return fileErrorf(projectPath, "the plugin chain %v has no %s: %s scaffolds into go/v4 projects "+
				"(kubebuilder init --plugins go/v4,%s)", chain, goV4Key, pluginKey, pluginKey)
		}
	case "edit":
		src, ok := universe[projectPath]
		if !ok {
			return fileErrorf(projectPath, "not found: run kubebuilder edit in the project's root")
		}
		var project struct{ Layout []string }
		if err := yaml.Unmarshal([]byte(src), &project); err != nil {
			return fileErrorf(projectPath, "does not parse: %v", err)
		}
		if !slices.Contains(project.Layout, goV4Key) {
			return fileErrorf(projectPath, "layout %v has no %s: %s edits go/v4 projects only",
				project.Layout, goV4Key, pluginKey)
		}
		if slices.Contains(project.Layout, pluginKey) {
			return fileErrorf(projectPath, "layout already has %s: the project was initialised with deltacache", pluginKey)
		}
	}
	return nil
}

// usesGrafana reports whether kubebuilder's grafana plugin scaffolded the project: it is
// recorded in PROJECT's plugins, or its dashboards are in the universe (when it runs
// earlier in the same command).
func usesGrafana(universe map[string]string, config map[string]any) bool {
	if _, ok := universe[grafanaPresent]; ok {
		return true
	}
	plugins, _ := config["plugins"].(map[string]any)
	_, ok := plugins[grafanaKey]
	return ok
}
