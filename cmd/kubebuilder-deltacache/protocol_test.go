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
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kubebuilder/v4/pkg/plugin/external"
	"sigs.k8s.io/yaml"

	deltacache "github.com/deltacache/deltacache"
)

var initChain = []string{goV4Key, "kustomize.common.kubebuilder.io/v2", pluginKey}

// initRequest is the request kubebuilder sends for `kubebuilder init --plugins
// go/v4,deltacache.io/v1-alpha ...args`: the universe go/v4 scaffolded and the config.
func initRequest(t *testing.T, args ...string) external.PluginRequest {
	t.Helper()
	var config map[string]any
	if err := yaml.Unmarshal([]byte(readScaffold(t, projectPath)), &config); err != nil {
		t.Fatal(err)
	}
	universe := map[string]string{}
	for _, path := range []string{mainGoPath, makefilePath, goModPath, projectPath, boilerplatePath} {
		universe[path] = readScaffold(t, path)
	}
	return external.PluginRequest{
		APIVersion: "v1alpha1", Command: "init", Args: args, Universe: universe, PluginChain: initChain, Config: config,
	}
}

func TestInitScaffoldsEveryFileOfTheSetupAndNothingElse(t *testing.T) {
	req := initRequest(t, "--domain", "example.com", "--label-indexes", "app,tier", "--deltacache-replace", "../dc")
	res := handle(req, t.TempDir())
	if res.Error {
		t.Fatalf("init failed: %v", res.ErrorMsgs)
	}
	want := []string{
		makefilePath, mainGoPath, goModPath, scriptPath,
		"internal/deltacache/cache_test.go", "internal/deltacache/suite_test.go",
	}
	if got := slices.Sorted(maps.Keys(res.Universe)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("universe %v, want %v", got, want)
	}
	if res.Universe[scriptPath] != deltacache.EnvtestBinariesScript {
		t.Errorf("%s is not the repository's hack/envtest-binaries.sh", scriptPath)
	}
	suite := res.Universe["internal/deltacache/suite_test.go"]
	for _, want := range []string{
		"Copyright " + strconv.Itoa(time.Now().Year()) + ".\n",
		"labelKeys, err = labelIndexesDefault(filepath.Join(\"..\", \"..\", \"cmd\", \"main.go\"))\n",
		"NewCache:               dcache.NewWith(dcache.WithLabelIndexes(labelKeys...)),",
	} {
		if !strings.Contains(suite, want) {
			t.Errorf("suite_test.go lacks %q", want)
		}
	}
	if !strings.Contains(res.Universe[mainGoPath], `"label-indexes", "app,tier",`) {
		t.Errorf("main.go does not default --label-indexes to app,tier")
	}
	if !strings.Contains(res.Universe[goModPath], "replace "+deltacacheModule+" => ../dc\n") {
		t.Errorf("go.mod lacks the replace:\n%s", res.Universe[goModPath])
	}
}

func TestInitAddsTheDashboardNextToKubebuildersGrafanaDashboards(t *testing.T) {
	req := initRequest(t, "--deltacache-replace", "../dc")
	req.Universe[grafanaPresent] = "{}"
	res := handle(req, t.TempDir())
	if res.Error {
		t.Fatalf("init failed: %v", res.ErrorMsgs)
	}
	if res.Universe[dashboardPath] != deltacache.InformersDashboard {
		t.Errorf("%s is missing or differs from the repository's", dashboardPath)
	}
}

func TestBadProjectsGetAnErrorNamingTheFileAndNoFiles(t *testing.T) {
	// For edit, kubebuilder sends the config with this plugin moved to the front of the
	// layout; the PROJECT file of the universe has the layout as it is.
	editOf := func(layout string) external.PluginRequest {
		req := initRequest(t)
		req.Command = "edit"
		req.Config["layout"] = []any{pluginKey, goV4Key}
		req.Universe[projectPath] = strings.Replace(req.Universe[projectPath], "- go.kubebuilder.io/v4\n", layout, 1)
		return req
	}
	layoutWithPlugin := editOf("- go.kubebuilder.io/v4\n- deltacache.io/v1-alpha\n")
	notGoV4 := editOf("- kustomize.common.kubebuilder.io/v2\n")
	noProject := editOf("")
	delete(noProject.Universe, projectPath)
	initWithoutGoV4 := initRequest(t)
	initWithoutGoV4.PluginChain = []string{pluginKey}
	noNewManager := initRequest(t, "--deltacache-replace", "../dc")
	noNewManager.Universe[mainGoPath] = strings.Replace(noNewManager.Universe[mainGoPath],
		"ctrl.NewManager(", "newManager(", 1)
	noMakefile := initRequest(t, "--deltacache-replace", "../dc")
	delete(noMakefile.Universe, makefilePath)
	badFlag := initRequest(t, "--label-indexes", "-x-")
	for name, tc := range map[string]struct {
		req  external.PluginRequest
		want string
	}{
		"edit of a project initialised with the plugin": {
			layoutWithPlugin, "PROJECT: layout already has deltacache.io/v1-alpha",
		},
		"edit of a project that is not go/v4": {
			notGoV4, "PROJECT: layout [kustomize.common.kubebuilder.io/v2] has no go.kubebuilder.io/v4",
		},
		"edit outside a project's root": {noProject, "PROJECT: not found"},
		"init without go/v4": {
			initWithoutGoV4, "PROJECT: the plugin chain [deltacache.io/v1-alpha] has no go.kubebuilder.io/v4",
		},
		"main.go without ctrl.NewManager": {noNewManager, "cmd/main.go: has no `mgr, err := ctrl.NewManager("},
		"no Makefile":                     {noMakefile, "Makefile: not found"},
		"invalid label key":               {badFlag, `--label-indexes: "-x-" is not a valid label key`},
	} {
		t.Run(name, func(t *testing.T) {
			res := handle(tc.req, t.TempDir())
			if !res.Error || len(res.ErrorMsgs) != 1 || !strings.HasPrefix(res.ErrorMsgs[0], tc.want) {
				t.Fatalf("got error=%v %q, want one message starting with %q", res.Error, res.ErrorMsgs, tc.want)
			}
			if len(res.Universe) != 0 {
				t.Errorf("an error response carries %d files, want none", len(res.Universe))
			}
		})
	}
}

func TestFlagsAndMetadataAnswerPerSubcommand(t *testing.T) {
	for _, sub := range []string{"--init", "--edit"} {
		res := handle(external.PluginRequest{Command: "flags", Args: []string{sub}}, "")
		var names []string
		for _, f := range res.Flags {
			names = append(names, f.Name)
		}
		if !slices.Equal(names, []string{flagLabelIndexes, flagReplace}) || res.Flags[0].Default != defaultLabelIndexes {
			t.Errorf("flags %s: %+v, want label-indexes (default %q) and deltacache-replace",
				sub, res.Flags, defaultLabelIndexes)
		}
		meta := handle(external.PluginRequest{Command: "metadata", Args: []string{sub}}, "").Metadata
		if !strings.Contains(meta.Examples, "--plugins") || !strings.Contains(meta.Description, "NewCache") {
			t.Errorf("metadata %s: %+v", sub, meta)
		}
	}
	res := handle(external.PluginRequest{Command: "flags", Args: []string{"--api"}}, "")
	if len(res.Flags) != 0 || res.Error {
		t.Errorf("flags --api: %+v, want no flags and no error", res)
	}
}

func TestCreateAPIChangesNothingAndUnknownCommandsFail(t *testing.T) {
	for _, command := range []string{"create api", "create webhook"} {
		res := handle(external.PluginRequest{Command: command, Universe: map[string]string{mainGoPath: "x"}}, "")
		if res.Error || len(res.Universe) != 0 {
			t.Errorf("%s: %+v, want no files and no error", command, res)
		}
	}
	if res := handle(external.PluginRequest{Command: "delete api"}, ""); !res.Error {
		t.Errorf("delete api: %+v, want an error", res)
	}
}

func TestRunWritesOnlyTheJSONResponseToStdout(t *testing.T) {
	in, err := json.Marshal(external.PluginRequest{APIVersion: "v1alpha1", Command: "flags", Args: []string{"--init"}})
	if err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	if err := run(bytes.NewReader(in), &out, &stderr); err != nil {
		t.Fatal(err)
	}
	if stderr.Len() != 0 {
		t.Errorf("flags wrote %q to stderr, want nothing", stderr.String())
	}
	var res external.PluginResponse
	dec := json.NewDecoder(&out)
	if err := dec.Decode(&res); err != nil {
		t.Fatal(err)
	}
	if res.APIVersion != "v1alpha1" || res.Command != "flags" || len(res.Flags) != 2 || dec.More() {
		t.Errorf("response %+v (more after it: %v)", res, dec.More())
	}
}

// kubebuilder passes the plugin's stderr through: a successful init says in one line what
// it changed (edit's line, with go.sum and the dashboard, is summary's too).
func TestRunSaysInOneLineWhatInitChanged(t *testing.T) {
	in, err := json.Marshal(initRequest(t, "--label-indexes", "app,tier", "--deltacache-replace", "../dc"))
	if err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	if err := run(bytes.NewReader(in), &out, &stderr); err != nil {
		t.Fatal(err)
	}
	var res external.PluginResponse
	if err := json.NewDecoder(&out).Decode(&res); err != nil || res.Error {
		t.Fatalf("init: %v %v", err, res.ErrorMsgs)
	}
	requireOneLine(t, stderr.String(), "cmd/main.go", "go.mod", "Makefile", "hack/envtest-binaries.sh",
		"internal/deltacache/", "--label-indexes=app,tier", "make test", "make run-local")
	if strings.Contains(stderr.String(), "go.sum") {
		t.Errorf("init's line %q names go.sum, which go/v4 writes", stderr.String())
	}

	edit := summary("edit", options{LabelKeys: []string{"tier"}}, map[string]string{
		mainGoPath: "", goModPath: "", goSumPath: "", makefilePath: "", scriptPath: "",
		"internal/deltacache/suite_test.go": "", "internal/deltacache/cache_test.go": "", dashboardPath: "",
	})
	requireOneLine(t, edit+"\n", "cmd/main.go", "go.mod", "go.sum", "Makefile", "internal/deltacache/",
		dashboardPath, "--label-indexes=tier")
}

func requireOneLine(t *testing.T, line string, mentions ...string) {
	t.Helper()
	if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") || !strings.HasPrefix(line, pluginKey+": ") {
		t.Errorf("%q is not one line starting with %q", line, pluginKey+": ")
	}
	for _, want := range mentions {
		if !strings.Contains(line, want) {
			t.Errorf("the line %q does not mention %q", line, want)
		}
	}
}

// After go/v4 has written its files, a failed init leaves them: kubebuilder refuses a second
// init there, so the error says to start again in an empty directory. Without go/v4 in the
// chain nothing was written, and it does not.
func TestFailedInitAfterGoV4SaysToStartAgainInAnEmptyDirectory(t *testing.T) {
	noNewManager := initRequest(t, "--deltacache-replace", "../dc")
	noNewManager.Universe[mainGoPath] = strings.Replace(noNewManager.Universe[mainGoPath], "ctrl.NewManager(", "newManager(", 1)
	res := handle(noNewManager, "/home/u/shop")
	if !res.Error || len(res.ErrorMsgs) != 1 || !strings.Contains(res.ErrorMsgs[0], "target directory is already initialized") ||
		!strings.Contains(res.ErrorMsgs[0], "rm -rf shop && mkdir shop && cd shop") {
		t.Errorf("a failed init after go/v4: %q, want the error and how to start again in an empty directory", res.ErrorMsgs)
	}
	withoutGoV4 := initRequest(t)
	withoutGoV4.PluginChain = []string{pluginKey}
	if res := handle(withoutGoV4, "/home/u/shop"); !res.Error || strings.Contains(strings.Join(res.ErrorMsgs, ""), "rm -rf") {
		t.Errorf("a failed init without go/v4: %q, want an error that does not tell to start again", res.ErrorMsgs)
	}
}
