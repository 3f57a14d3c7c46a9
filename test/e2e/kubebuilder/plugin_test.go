//go:build e2e

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

package kubebuilder

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const (
	plugin = "deltacache.io/v1-alpha"
	repo   = "example.com/shop"
)

var createAPI = []string{
	"create", "api", "--group", "shop", "--version", "v1", "--kind", "Cart", "--resource", "--controller",
}

func TestInitWithThePluginThenCreateAPIGivesAProjectWhoseMakeTestRunsOnDeltacache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shop")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := kubebuilder(t, dir, "init", "--plugins", "go/v4,"+plugin, "--domain", "example.com", "--repo", repo,
		"--label-indexes", "app,tier", "--deltacache-replace", repoRoot)
	if !strings.Contains(out, plugin+": init set deltacache up (--label-indexes=app,tier) in ") {
		t.Errorf("kubebuilder init did not say what it changed:\n%s", out)
	}
	project := readFile(t, dir, "PROJECT")
	if !strings.Contains(project, "layout:\n- go.kubebuilder.io/v4\n- "+plugin+"\n") {
		t.Fatalf("PROJECT does not record %s in its layout:\n%s", plugin, project)
	}

	t.Run("a second setup by edit fails and changes nothing", func(t *testing.T) {
		before := snapshot(t, dir)
		res := run(t, dir, kubebuilderBin, "edit", "--plugins", plugin)
		requireFailure(t, res, "PROJECT: layout already has "+plugin)
		requireUnchanged(t, dir, before)
	})

	kubebuilder(t, dir, createAPI...)
	requireDeltacacheProject(t, dir, "app,tier", repoRoot)
}

func TestEditWithThePluginAndGrafanaGivesAProjectWhoseMakeTestRunsOnDeltacache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shop")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	kubebuilder(t, dir, "init", "--domain", "example.com", "--repo", repo)
	replace, err := filepath.Rel(dir, repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	out := kubebuilder(t, dir, "edit", "--plugins", "grafana/v1-alpha,"+plugin,
		"--label-indexes", "tier", "--deltacache-replace", replace)
	if !strings.Contains(out, plugin+": edit set deltacache up (--label-indexes=tier) in ") {
		t.Errorf("kubebuilder edit did not say what it changed:\n%s", out)
	}

	dashboard := "grafana/deltacache-informers.json"
	if readFile(t, dir, dashboard) != readFile(t, repoRoot, dashboard) {
		t.Errorf("grafana/deltacache-informers.json differs from the repository's")
	}
	readFile(t, dir, "grafana/controller-runtime-metrics.json")

	t.Run("a second edit fails and changes nothing", func(t *testing.T) {
		before := snapshot(t, dir)
		res := run(t, dir, kubebuilderBin, "edit", "--plugins", plugin)
		requireFailure(t, res, "cmd/main.go: already imports github.com/deltacache/deltacache/pkg/cache")
		requireUnchanged(t, dir, before)
	})

	kubebuilder(t, dir, createAPI...)
	requireDeltacacheProject(t, dir, "tier", replace)
}

func TestBadInputsFailNamingTheFileAndChangeNoFile(t *testing.T) {
	t.Run("init without go/v4", func(t *testing.T) {
		dir := t.TempDir()
		before := snapshot(t, dir)
		res := run(t, dir, kubebuilderBin, "init", "--plugins", plugin)
		requireFailure(t, res, "PROJECT: the plugin chain ["+plugin+"] has no go.kubebuilder.io/v4")
		requireUnchanged(t, dir, before)
	})

	t.Run("edit of a project that is not go/v4", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "manifests")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		kubebuilder(t, dir, "init", "--plugins", "kustomize/v2", "--domain", "example.com")
		before := snapshot(t, dir)
		res := run(t, dir, kubebuilderBin, "edit", "--plugins", plugin)
		requireFailure(t, res, "PROJECT: layout [kustomize.common.kubebuilder.io/v2] has no go.kubebuilder.io/v4")
		requireUnchanged(t, dir, before)
	})

	t.Run("edit of a main.go without the scaffolded ctrl.NewManager call", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "shop")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		kubebuilder(t, dir, "init", "--domain", "example.com", "--repo", repo)
		mainGo := readFile(t, dir, "cmd/main.go")
		edited := strings.Replace(mainGo, "ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{",
			"newManager(ctrl.GetConfigOrDie(), ctrl.Options{", 1)
		if edited == mainGo {
			t.Fatal("kubebuilder's cmd/main.go has no `ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{`")
		}
		writeFile(t, dir, "cmd/main.go", edited)
		before := snapshot(t, dir)
		res := run(t, dir, kubebuilderBin, "edit", "--plugins", plugin)
		requireFailure(t, res, "cmd/main.go: has no `mgr, err := ctrl.NewManager(..., ctrl.Options{...})`")
		requireUnchanged(t, dir, before)
	})
}

// requireDeltacacheProject checks a project the plugin set up: go.mod and cmd/main.go say
// what the plugin was given, the manager builds, has deltacache's flags and serves its
// informer checks, and the project's own `make test` passes offline, the plugin's suite
// among its packages, with each of that suite's specs run.
func requireDeltacacheProject(t *testing.T, dir, labelIndexes, replace string) {
	t.Helper()
	goMod := readFile(t, dir, "go.mod")
	if !strings.Contains(goMod, "replace github.com/deltacache/deltacache => "+replace+"\n") {
		t.Errorf("go.mod has no replace of deltacache with %s:\n%s", replace, goMod)
	}
	mainGo := readFile(t, dir, "cmd/main.go")
	newCache := regexp.MustCompile(`\n\t\tNewCache: +` +
		regexp.QuoteMeta(`dcache.NewWith(dcache.WithLabelIndexes(labelKeys(labelIndexes)...)),`) + `\n`)
	if !newCache.MatchString(mainGo) {
		t.Errorf("cmd/main.go does not set NewCache to deltacache's cache with the --label-indexes keys:\n%s", mainGo)
	}
	for _, want := range []string{
		`flag.StringVar(&labelIndexes, "label-indexes", "` + labelIndexes + `",`,
		`mgr.AddReadyzCheck("informers", dcache.ReadyzCheck(mgr.GetCache()))`,
		`mgr.AddHealthzCheck("informers", dcache.HealthzCheck(mgr.GetCache(), informerStallTimeout))`,
	} {
		if !strings.Contains(mainGo, want) {
			t.Errorf("cmd/main.go lacks %q", want)
		}
	}

	// deltacache among the direct requirements, not in the indirect block.
	direct := goMod[strings.Index(goMod, "require ("):]
	if direct = direct[:strings.Index(direct, ")")]; !strings.Contains(direct, "\tgithub.com/deltacache/deltacache ") {
		t.Errorf("go.mod's first require block lacks deltacache:\n%s", goMod)
	}

	out := mustRun(t, dir, "make", "test")
	for _, pkg := range []string{repo + "/internal/deltacache", repo + "/internal/controller"} {
		if !regexp.MustCompile(`(?m)^ok\s+` + regexp.QuoteMeta(pkg) + `\s`).MatchString(out) {
			t.Errorf("make test did not pass %s:\n%s", pkg, out)
		}
	}
	// The control plane comes from the per-machine cache: setup-envtest is not asked, no path
	// line is printed, and nothing lands in the project's bin/.
	if strings.Contains(out, "setup-envtest use") || regexp.MustCompile(`(?m)^/\S+/\d+\.\d+\.\d+-\w+-\w+$`).MatchString(out) {
		t.Errorf("make test should take the control plane from hack/envtest-binaries.sh quietly:\n%s", out)
	}
	if size := treeSize(t, filepath.Join(dir, "bin")); size > 0 {
		t.Errorf("after make test the project's bin/ holds %d bytes, want nothing (control plane and tools "+
			"live outside the project)", size)
	}
	requireCreateAPIAsQuickAsOnACleanTree(t, dir)

	mustRun(t, dir, "make", "build")
	help := run(t, dir, filepath.Join(dir, "bin", "manager"), "--help").Output
	for _, want := range []string{
		"-label-indexes string", `(default "` + labelIndexes + `")`, "-informer-stall-timeout duration",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("bin/manager --help lacks %q:\n%s", want, help)
		}
	}

	requireManagerServesInformerChecks(t, dir, "Cart.v1.shop.example.com")
	requireRunLocalServesReadyz(t, dir)

	// The suite's specs, verbosely: each ran and passed.
	verbose := mustRun(t, dir, "go", "test", "./internal/deltacache/", "-count=1", "-v", "-ginkgo.v", "-ginkgo.no-color")
	for _, want := range []string{
		"The manager's cache is deltacache's",
		"The manager's cache answers a List by an indexed label from the label index, not by a scan",
		"The manager's cache reports ready once its informers have synced",
		"Ran 3 of 3 Specs",
		"SUCCESS!",
	} {
		if !strings.Contains(verbose, want) {
			t.Errorf("go test -v ./internal/deltacache/ lacks %q:\n%s", want, verbose)
		}
	}
}

// requireFailure checks that a command failed with an error containing want.
func requireFailure(t *testing.T, res result, want string) {
	t.Helper()
	if res.Err == nil {
		t.Fatalf("the command succeeded, want a failure with %q:\n%s", want, res.Output)
	}
	if !strings.Contains(res.Output, want) {
		t.Fatalf("the command failed without %q:\n%s", want, res.Output)
	}
}

func readFile(t *testing.T, dir, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, dir, path, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, path), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
