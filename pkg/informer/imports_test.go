package informer

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPackageImportsNeitherControllerRuntimeNorUnsafe pins two rules of
// docs/architecture.md's package map: pkg/informer does not import
// controller-runtime (a client-go-style user of the informer must not pull
// it in), and all of its unsafe code lives in pkg/informer/codec. Test files
// are exempt.
func TestPackageImportsNeitherControllerRuntimeNorUnsafe(t *testing.T) {
	files, err := filepath.Glob("*.go")
	must(t, err)
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		must(t, err)
		checked++
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			must(t, err)
			if path == "unsafe" || strings.HasPrefix(path, "sigs.k8s.io/controller-runtime") {
				t.Errorf("%s imports %q", name, path)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d files of the package, want its 20 or more", checked)
	}
}
