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
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

func TestEditGoModRequiresDeltacacheAndReplacesItWithTheCheckout(t *testing.T) {
	got, err := editGoMod(readScaffold(t, goModPath), replacedVersion, "../deltacache")
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(goModPath, []byte(got), nil)
	if err != nil {
		t.Fatal(err)
	}
	var required string
	direct := 0
	for _, req := range f.Require {
		if req.Mod.Path == deltacacheModule {
			required = req.Mod.Version
		}
		if !req.Indirect {
			direct++
		}
	}
	if required != replacedVersion {
		t.Errorf("requires %s at %q, want %q", deltacacheModule, required, replacedVersion)
	}
	if len(f.Replace) != 1 || f.Replace[0].Old.Path != deltacacheModule || f.Replace[0].New.Path != "../deltacache" {
		t.Errorf("replaces %+v, want one replace of %s with ../deltacache", f.Replace, deltacacheModule)
	}
	// In the block of direct requirements, next to controller-runtime, not among the indirect ones.
	block := got[strings.Index(got, "require ("):]
	block = block[:strings.Index(block, ")")]
	if !strings.Contains(block, "\t"+deltacacheModule+" "+replacedVersion+"\n") ||
		!strings.Contains(block, "sigs.k8s.io/controller-runtime") {
		t.Errorf("%s is not in the first require block (the direct requirements):\n%s", deltacacheModule, got)
	}
	if f.Module.Mod.Path != "example.com/ref" || direct != 6 {
		t.Errorf("module %s with %d direct requirements, want example.com/ref with kubebuilder's 5 and deltacache",
			f.Module.Mod.Path, direct)
	}
}

func TestEditGoModWithoutReplaceRequiresTheGivenVersionAndRefusesASecondRequire(t *testing.T) {
	got, err := editGoMod(readScaffold(t, goModPath), "v0.3.0", "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, deltacacheModule+" v0.3.0") || strings.Contains(got, "replace") {
		t.Errorf("want a require of %s v0.3.0 and no replace, got:\n%s", deltacacheModule, got)
	}
	_, err = editGoMod(got, "v0.3.0", "")
	var fe *fileError
	if !errors.As(err, &fe) || fe.File != goModPath || !strings.Contains(fe.Msg, "already requires") {
		t.Fatalf("second edit: got %v, want an error on go.mod saying it already requires deltacache", err)
	}
}

// TestTidyResolvesARelativeReplaceFromTheProjectAndWritesItBack tidies a project whose
// replace points at a local stand-in for deltacache (no module proxy needed): the go.mod
// returned keeps the relative path, and tidy added the go line's requirement it needs.
func TestTidyResolvesARelativeReplaceFromTheProjectAndWritesItBack(t *testing.T) {
	root := t.TempDir()
	lib := filepath.Join(root, "deltacache")
	if err := os.MkdirAll(filepath.Join(lib, "pkg", "cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(lib, "go.mod"), "module "+deltacacheModule+"\n\ngo 1.26.0\n")
	write(filepath.Join(lib, "pkg", "cache", "cache.go"), "package cache\n\nconst Name = \"deltacache\"\n")
	goMod, err := editGoMod("module example.com/shop\n\ngo 1.26.0\n", replacedVersion, "../deltacache")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		goModPath: goMod,
		"cmd/main.go": "package main\n\nimport dcache \"" + cachePackage + "\"\n\n" +
			"func main() { println(dcache.Name) }\n",
		"bin/controller-gen": "\x7fELF not copied",
	}
	gotMod, gotSum, err := tidy(files, filepath.Join(root, "shop"), "../deltacache")
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(goModPath, []byte(gotMod), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Replace) != 1 || f.Replace[0].New.Path != "../deltacache" {
		t.Errorf("replace %+v, want ../deltacache as given:\n%s", f.Replace, gotMod)
	}
	if len(f.Require) != 1 || f.Require[0].Mod.Path != deltacacheModule {
		t.Errorf("requires %+v, want only %s:\n%s", f.Require, deltacacheModule, gotMod)
	}
	if gotSum != "" {
		t.Errorf("go.sum %q, want empty: a replaced directory module has no checksum", gotSum)
	}
}

func TestSkipInCopyLeavesOutToolBinariesAndGitObjects(t *testing.T) {
	for path, want := range map[string]bool{
		"bin/controller-gen": true, ".git/HEAD": true, "cmd/main.go": false, "go.mod": false, "internal/bin/x.go": false,
	} {
		if got := skipInCopy(path); got != want {
			t.Errorf("skipInCopy(%q) = %v, want %v", path, got, want)
		}
	}
}
