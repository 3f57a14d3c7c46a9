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
	"maps"

	deltacache "github.com/deltacache/deltacache"
)

const dashboardPath = "grafana/deltacache-informers.json"

// project is what an init or edit request says of the project.
type project struct {
	// Command is "init" or "edit".
	Command string
	// Universe holds the project's files, by path relative to its root.
	Universe map[string]string
	// Chain is the plugin chain of the command; Config the PROJECT file as a map.
	Chain  []string
	Config map[string]any
	// Dir is the project root on disk (the plugin's working directory).
	Dir string
}

// scaffold returns the files that set deltacache up in p, by path: cmd/main.go, Makefile and
// go.mod edited, the envtest script, the suite of internal/deltacache, and the Grafana
// dashboard when kubebuilder's grafana plugin is in use. It checks everything before it
// returns anything, so an error leaves the project as it was. For edit it also returns
// go.mod and go.sum tidied; for init, go/v4 tidies after every plugin has run.
func scaffold(p project, opts options) (map[string]string, error) {
	if err := checkProject(p.Command, p.Chain, p.Universe); err != nil {
		return nil, err
	}
	for _, path := range []string{mainGoPath, makefilePath, goModPath} {
		if _, ok := p.Universe[path]; !ok {
			return nil, fileErrorf(path, "not found: %s runs after go/v4 has scaffolded the project", pluginKey)
		}
	}
	mainGo, err := editMainGo(p.Universe[mainGoPath], opts.LabelKeys)
	if err != nil {
		return nil, err
	}
	makefile, err := editMakefile(p.Universe[makefilePath])
	if err != nil {
		return nil, err
	}
	version, err := deltacacheVersion(opts.Replace)
	if err != nil {
		return nil, err
	}
	goMod, err := editGoMod(p.Universe[goModPath], version, opts.Replace)
	if err != nil {
		return nil, err
	}
	out, err := renderTestFiles(p.Universe)
	if err != nil {
		return nil, err
	}
	out[mainGoPath] = mainGo
	out[makefilePath] = makefile
	out[goModPath] = goMod
	out[scriptPath] = deltacache.EnvtestBinariesScript
	if usesGrafana(p.Universe, p.Config) {
		out[dashboardPath] = deltacache.InformersDashboard
	}
	if p.Command == "edit" {
		files := maps.Clone(p.Universe)
		maps.Copy(files, out)
		if out[goModPath], out[goSumPath], err = tidy(files, p.Dir, opts.Replace); err != nil {
			return nil, fileErrorf(goModPath, "%v", err)
		}
	}
	return out, nil
}
