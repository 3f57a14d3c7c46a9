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
	"fmt"
	"slices"
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

// checkProject refuses a project deltacache cannot be scaffolded into: one whose plugin
// chain lacks go/v4, and, for edit, one whose layout already holds this plugin (it was
// initialised with it).
func checkProject(command string, chain []string, config map[string]any) error {
	layout := stringList(config["layout"])
	switch command {
	case "init":
		if !slices.Contains(chain, goV4Key) {
			return fileErrorf(projectPath, "the plugin chain %v has no %s: %s scaffolds into go/v4 projects "+
				"(kubebuilder init --plugins go/v4,%s)", chain, goV4Key, pluginKey, pluginKey)
		}
	case "edit":
		if !slices.Contains(layout, goV4Key) {
			return fileErrorf(projectPath, "layout %v has no %s: %s edits go/v4 projects only", layout, goV4Key, pluginKey)
		}
		if slices.Contains(layout, pluginKey) {
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

func stringList(v any) []string {
	items, _ := v.([]any)
	out := make([]string, 0, len(items))
	for _, item := range items {
		out = append(out, fmt.Sprint(item))
	}
	return out
}
