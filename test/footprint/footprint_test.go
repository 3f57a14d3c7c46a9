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

// Package footprint checks what requiring deltacache does to a user's module graph.
package footprint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	deltacacheModule  = "github.com/deltacache/deltacache"
	controllerRuntime = "sigs.k8s.io/controller-runtime"
)

// userMain is the main package of the two throwaway modules: an operator's imports of
// controller-runtime, plus, in the module that requires deltacache, the line of the README.
const userMain = `package main

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
%s)

func main() {
	var newCache cache.NewCacheFunc = %s
	_ = ctrl.Options{NewCache: newCache}
}
`

// TestRequiringDeltacacheAddsNoModuleToAControllerRuntimeProject builds two throwaway
// modules that require the controller-runtime version deltacache requires: one that uses
// controller-runtime's cache, and the same one importing deltacache's pkg/cache through a
// replace to this checkout. After `go mod tidy` in both, `go list -m all` of the second
// must list no module that the first does not (deltacache itself aside), and its go line
// must be no newer. Versions that deltacache raises are logged: the README states them.
//
// It needs the modules of both graphs in the module cache, or a module proxy to fetch them
// from (GOFLAGS=-mod=mod, GOWORK=off, GOTOOLCHAIN=local: nothing else is reached).
func TestRequiringDeltacacheAddsNoModuleToAControllerRuntimeProject(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go mod tidy on two modules")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	rootMod := editJSON(t, root)
	if rootMod.Module.Path != deltacacheModule {
		t.Fatalf("%s is module %q, want %q", root, rootMod.Module.Path, deltacacheModule)
	}
	crVersion := ""
	for _, r := range rootMod.Require {
		if r.Path == controllerRuntime {
			crVersion = r.Version
		}
	}
	if crVersion == "" {
		t.Fatalf("%s/go.mod does not require %s", root, controllerRuntime)
	}

	without := userModule(t, crVersion, "", "", "cache.New")
	with := userModule(t, crVersion, root,
		"\n\tdcache \"github.com/deltacache/deltacache/pkg/cache\"\n", "dcache.New")

	withoutMods, withMods := listModules(t, without), listModules(t, with)
	if _, ok := withMods[deltacacheModule]; !ok {
		t.Fatalf("the module that imports deltacache does not list %s: %v", deltacacheModule, withMods)
	}
	var extra, raised []string
	for path, version := range withMods {
		if path == deltacacheModule {
			continue
		}
		before, ok := withoutMods[path]
		switch {
		case !ok:
			extra = append(extra, path+" "+version)
		case before != version:
			raised = append(raised, path+" "+before+" => "+version)
		}
	}
	slices.Sort(extra)
	slices.Sort(raised)
	t.Logf("controller-runtime %s: %d modules without deltacache, %d with it", crVersion,
		len(withoutMods), len(withMods))
	if len(raised) > 0 {
		t.Logf("versions deltacache raises:\n\t%s", strings.Join(raised, "\n\t"))
	}
	if len(extra) > 0 {
		t.Errorf("requiring deltacache adds %d modules that controller-runtime %s alone does not "+
			"need (a package of the root module imports them, or the root go.mod requires them "+
			"for a test that belongs in a module of its own):\n\t%s",
			len(extra), crVersion, strings.Join(extra, "\n\t"))
	}
	if goWithout, goWith := editJSON(t, without).Go, editJSON(t, with).Go; goWith != goWithout {
		t.Errorf("requiring deltacache changes the go line from %s to %s", goWithout, goWith)
	}
}

// modFile is the part of `go mod edit -json` that the test reads.
type modFile struct {
	Module  struct{ Path string }
	Go      string
	Require []struct{ Path, Version string }
}

func editJSON(t *testing.T, dir string) modFile {
	t.Helper()
	var m modFile
	if err := json.Unmarshal(goCmd(t, dir, "mod", "edit", "-json"), &m); err != nil {
		t.Fatalf("go mod edit -json in %s: %v", dir, err)
	}
	return m
}

// userModule writes a module requiring controller-runtime crVersion whose main package
// has the given extra imports and NewCache expression, with a replace of deltacache to
// replaceDir when that is set, and tidies it. Its go line starts old, so that tidy raises
// it to what the graph needs.
func userModule(t *testing.T, crVersion, replaceDir, imports, newCache string) string {
	t.Helper()
	dir := t.TempDir()
	goMod := "module example.com/operator\n\ngo 1.22.0\n\nrequire " + controllerRuntime + " " + crVersion + "\n"
	if replaceDir != "" {
		goMod += "\nreplace " + deltacacheModule + " => " + replaceDir + "\n"
	}
	files := map[string]string{
		"go.mod":  goMod,
		"main.go": fmt.Sprintf(userMain, imports, newCache),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goCmd(t, dir, "mod", "tidy")
	return dir
}

// listModules returns `go list -m all` of the module in dir, path to version, the main
// module left out.
func listModules(t *testing.T, dir string) map[string]string {
	t.Helper()
	mods := map[string]string{}
	for i, line := range strings.Split(strings.TrimSpace(string(goCmd(t, dir, "list", "-m", "all"))), "\n") {
		fields := strings.Fields(line)
		if i == 0 || len(fields) == 0 {
			continue
		}
		version := ""
		if len(fields) > 1 {
			version = fields[1]
		}
		mods[fields[0]] = version
	}
	return mods
}

func goCmd(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return out
}
