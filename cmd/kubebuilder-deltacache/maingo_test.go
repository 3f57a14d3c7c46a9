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
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

const (
	scaffoldDir = "testdata/kubebuilder-v4.16.0/"
	goldenMain  = scaffoldDir + "cmd/main.go.deltacache"
)

// readScaffold returns a file kubebuilder v4.16.0 scaffolded (`kubebuilder init --domain
// example.com --repo example.com/ref`), kept in testdata/.
//
// The fixture's go.mod is kept as go.mod.fixture: a go.mod in the tree would make it a
// module of its own, which the repository's controller-gen run (paths=./...) loads and fails on.
func readScaffold(t *testing.T, path string) string {
	t.Helper()
	if path == goModPath {
		path = goModPath + ".fixture"
	}
	b, err := os.ReadFile(scaffoldDir + path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEditMainGoOfTheKubebuilderScaffoldMatchesTheGoldenFile(t *testing.T) {
	got, err := editMainGo(readScaffold(t, mainGoPath), []string{"app", "tier"})
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(goldenMain, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenMain)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("edited main.go differs from %s (go test -run %s -update rewrites it):\n%s", goldenMain, t.Name(), got)
	}
}

func TestEditMainGoPlacesEachAdditionAtItsAnchor(t *testing.T) {
	got, err := editMainGo(readScaffold(t, mainGoPath), []string{"app", "tier"})
	if err != nil {
		t.Fatal(err)
	}
	// Each line must come after the one before it.
	inOrder := []string{
		"\t\"strings\"\n",
		"\t\"time\"\n",
		"\n\n\tdcache \"github.com/deltacache/deltacache/pkg/cache\"\n\t// +kubebuilder:scaffold:imports\n",
		`flag.StringVar(&labelIndexes, "label-indexes", "app,tier",`,
		`flag.DurationVar(&informerStallTimeout, "informer-stall-timeout", dcache.DefaultStallTimeout,`,
		"\tflag.Parse()\n",
		"mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{\n\t\t// deltacache's informer cache",
		"\t\tNewCache:               dcache.NewWith(dcache.WithLabelIndexes(labelKeys(labelIndexes)...)),\n" +
			"\t\tScheme:                 scheme,\n",
		`if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {`,
		`if err := mgr.AddHealthzCheck("informers", dcache.HealthzCheck(mgr.GetCache(), informerStallTimeout)); err != nil {`,
		`if err := mgr.AddReadyzCheck("informers", dcache.ReadyzCheck(mgr.GetCache())); err != nil {`,
		`setupLog.Info("Starting manager")`,
		"func labelKeys(flagValue string) []string {",
	}
	rest := got
	for _, line := range inOrder {
		i := strings.Index(rest, line)
		if i < 0 {
			t.Fatalf("%q is missing, or not after %q, in:\n%s", line, inOrder[0], got)
		}
		rest = rest[i+len(line):]
	}
}

// The user's diff of cmd/main.go holds only added lines: no line kubebuilder wrote is
// re-aligned or otherwise changed.
func TestEditMainGoOnlyAddsLines(t *testing.T) {
	src := readScaffold(t, mainGoPath)
	got, err := editMainGo(src, []string{"app", "tier"})
	if err != nil {
		t.Fatal(err)
	}
	rest := got
	for _, line := range strings.SplitAfter(src, "\n") {
		i := strings.Index(rest, line)
		if i < 0 {
			t.Fatalf("kubebuilder's line %q is changed or out of order in the edited main.go", line)
		}
		rest = rest[i+len(line):]
	}
}

func TestEditMainGoUsesTheManagerVariableAndAnOptionsLiteralWithoutScheme(t *testing.T) {
	src := `package main

import (
	"flag"

	ctrl "sigs.k8s.io/controller-runtime"
)

func main() {
	flag.Parse()
	m, err := ctrl.NewManager(cfg, ctrl.Options{
		LeaderElection: true,
	})
	if err := m.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		os.Exit(1)
	}
	_ = m.Start(ctx)
}
`
	got, err := editMainGo(src, []string{"app"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"ctrl.Options{\n\t\t// deltacache's informer cache",
		"NewCache:       dcache.NewWith(",
		`if err := m.AddReadyzCheck("informers", dcache.ReadyzCheck(m.GetCache())); err != nil {`,
		"import (\n\t\"flag\"\n\t\"os\"\n\t\"strings\"\n\t\"time\"\n",
		"ctrl \"sigs.k8s.io/controller-runtime\"\n\n\tdcache \"github.com/deltacache/deltacache/pkg/cache\"\n)",
		`"label-indexes", "app",`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

func TestEditMainGoRefusesAMainGoItCannotAnchorOnAndNamesTheFile(t *testing.T) {
	scaffolded := readScaffold(t, mainGoPath)
	edited, err := editMainGo(scaffolded, []string{"app"})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ src, want string }{
		"no ctrl.NewManager call": {
			strings.Replace(scaffolded, "ctrl.NewManager(", "newManager(", 1), "has no `mgr, err := ctrl.NewManager(",
		},
		"NewManager without an Options literal": {
			"package main\nimport ctrl \"sigs.k8s.io/controller-runtime\"\n" +
				"func main() {\n\tmgr, err := ctrl.NewManager(cfg, opts)\n}\n",
			"has no `mgr, err := ctrl.NewManager(",
		},
		"already edited": {edited, "already imports github.com/deltacache/deltacache/pkg/cache"},
		"NewCache set by hand": {
			strings.Replace(scaffolded, "\t\tScheme:                 scheme,\n",
				"\t\tScheme: scheme,\n\t\tNewCache: myCache,\n", 1),
			"already sets NewCache in ctrl.Options at line 159",
		},
		"no flag.Parse": {
			strings.Replace(scaffolded, "flag.Parse()", "flag.CommandLine.Parse(os.Args[1:])", 1), "has no flag.Parse() call",
		},
		"no health checks": {
			strings.ReplaceAll(strings.ReplaceAll(scaffolded, "AddHealthzCheck", "AddCheck"), "AddReadyzCheck", "AddCheck"),
			"has no `if err := mgr.AddReadyzCheck(...)`",
		},
		"a name the setup declares": {
			strings.Replace(scaffolded, "var probeAddr string", "var probeAddr, labelIndexes string", 1),
			"already uses the name labelIndexes",
		},
		"not Go": {"package main\nfunc main() {", "does not parse"},
		"no controller-runtime import": {
			strings.Replace(scaffolded, `ctrl "sigs.k8s.io/controller-runtime"`, "", 1),
			"does not import sigs.k8s.io/controller-runtime",
		},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := editMainGo(tc.src, []string{"app"})
			var fe *fileError
			if !errors.As(err, &fe) || fe.File != mainGoPath || !strings.Contains(fe.Msg, tc.want) {
				t.Fatalf("got (%d bytes, %v), want an error on %s containing %q", len(out), err, mainGoPath, tc.want)
			}
		})
	}
}

// TestScaffoldedLabelKeysSplitsTheFlagValue runs the labelKeys function the setup appends to
// main.go on values a user may pass to --label-indexes.
func TestScaffoldedLabelKeysSplitsTheFlagValue(t *testing.T) {
	dir := t.TempDir()
	program := "package main\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n" + labelKeysFunc + `
func main() {
	for _, v := range []string{"app,tier", "app, tier,,x", "", " , "} {
		fmt.Printf("%q\n", labelKeys(v))
	}
}
`
	for name, content := range map[string]string{"go.mod": "module labelkeys\n\ngo 1.26.0\n", "main.go": program} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	want := "[\"app\" \"tier\"]\n[\"app\" \"tier\" \"x\"]\n[]\n[]\n"
	if string(out) != want {
		t.Errorf("labelKeys printed\n%s\nwant\n%s", out, want)
	}
}
