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
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestScaffoldedSuiteReadsTheLabelKeysFromMainGo runs the function of the scaffolded suite
// that finds the label keys to test with: the default of cmd/main.go's --label-indexes flag,
// as the plugin wrote it and as a user may change it later.
func TestScaffoldedSuiteReadsTheLabelKeysFromMainGo(t *testing.T) {
	files, err := renderTestFiles(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	suite := files["internal/deltacache/suite_test.go"]
	fn := funcSource(t, suite, "labelIndexesDefault")
	if !strings.Contains(suite, `labelIndexesDefault(filepath.Join("..", "..", "cmd", "main.go"))`) {
		t.Errorf("the suite does not read cmd/main.go's default:\n%s", suite)
	}

	dir := t.TempDir()
	golden, err := os.ReadFile(goldenMain)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(golden), `"label-indexes", "app,tier",`, `"label-indexes", "team, app.kubernetes.io/name",`, 1)
	program := `package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
)

` + fn + `

func main() {
	for _, path := range os.Args[1:] {
		keys, err := labelIndexesDefault(path)
		fmt.Printf("%q %v\n", keys, err != nil)
	}
}
`
	for name, content := range map[string]string{
		"go.mod": "module labelkeys\n\ngo 1.26.0\n", "main.go": program,
		"golden/main.go": string(golden), "changed/main.go": changed,
		"kubebuilder/main.go": readScaffold(t, mainGoPath),
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "run", ".", "golden/main.go", "changed/main.go", "kubebuilder/main.go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	want := "[\"app\" \"tier\"] false\n[\"team\" \"app.kubernetes.io/name\"] false\n[] true\n"
	if string(out) != want {
		t.Errorf("labelIndexesDefault printed\n%s\nwant (keys, failed)\n%s", out, want)
	}
}

// TestScaffoldedSuiteFindsTheControlPlaneInThePerMachineCache checks that the suite, run
// without KUBEBUILDER_ASSETS (from an IDE), looks where hack/envtest-binaries.sh builds,
// not in the project's bin/.
func TestScaffoldedSuiteFindsTheControlPlaneInThePerMachineCache(t *testing.T) {
	files, err := renderTestFiles(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	suite := files["internal/deltacache/suite_test.go"]
	fn := funcSource(t, suite, "envtestBinaryDir")
	for _, want := range []string{`os.Getenv("DELTACACHE_CACHE_DIR")`, `os.UserCacheDir()`, `"deltacache", "envtest"`} {
		if !strings.Contains(fn, want) {
			t.Errorf("envtestBinaryDir lacks %q:\n%s", want, fn)
		}
	}
	if strings.Contains(suite, `"bin", "k8s"`) {
		t.Errorf("the suite still looks in bin/k8s:\n%s", suite)
	}
}

// funcSource returns the source of the function name declared in src.
func funcSource(t *testing.T, src, name string) string {
	t.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "suite_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, decl := range file.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok && fn.Name.Name == name {
			return src[fset.Position(fn.Pos()).Offset:fset.Position(fn.End()).Offset]
		}
	}
	t.Fatalf("the scaffolded suite declares no func %s", name)
	return ""
}
