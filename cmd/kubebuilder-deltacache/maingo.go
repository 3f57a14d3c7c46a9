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
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

const (
	mainGoPath      = "cmd/main.go"
	cachePackage    = "github.com/deltacache/deltacache/pkg/cache"
	importsMarker   = "// +kubebuilder:scaffold:imports"
	ctrlPackagePath = "sigs.k8s.io/controller-runtime"
)

// editMainGo returns cmd/main.go with deltacache set up: the import of pkg/cache, the
// --label-indexes and --informer-stall-timeout flags, NewCache in the ctrl.Options literal
// of the ctrl.NewManager call, and the informer healthz and readyz checks after the
// scaffolded ones. The anchors are what kubebuilder's go/v4 scaffold writes: the
// imports marker, flag.Parse(), `ctrl.NewManager(..., ctrl.Options{...})` assigned to the
// manager variable, and its AddHealthzCheck/AddReadyzCheck if-statements. A missing
// anchor, or a main.go that already sets NewCache or imports deltacache, is an error.
func editMainGo(src string, keys []string) (string, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, mainGoPath, src, parser.ParseComments)
	if err != nil {
		return "", fileErrorf(mainGoPath, "does not parse: %v", err)
	}
	if !importPath(file, ctrlPackagePath) {
		return "", fileErrorf(mainGoPath, "does not import %s (as ctrl), as kubebuilder's go/v4 scaffold does",
			ctrlPackagePath)
	}
	if importPath(file, cachePackage) {
		return "", fileErrorf(mainGoPath, "already imports %s: deltacache is set up in this project", cachePackage)
	}
	for _, name := range addedNames {
		if usesName(file, name) {
			return "", fileErrorf(mainGoPath, "already uses the name %s, which deltacache's setup declares", name)
		}
	}
	mainFunc := findMain(file)
	if mainFunc == nil {
		return "", fileErrorf(mainGoPath, "has no func main")
	}
	call, mgrName := findNewManager(mainFunc)
	if call == nil {
		return "", fileErrorf(mainGoPath, "has no `mgr, err := ctrl.NewManager(..., ctrl.Options{...})` "+
			"as kubebuilder's go/v4 scaffold writes it; deltacache sets NewCache in that ctrl.Options literal")
	}
	opts := call.Args[1].(*ast.CompositeLit)
	for _, elt := range opts.Elts {
		if kv, ok := elt.(*ast.KeyValueExpr); ok && identName(kv.Key) == "NewCache" {
			return "", fileErrorf(mainGoPath, "already sets NewCache in ctrl.Options at line %d",
				fset.Position(kv.Pos()).Line)
		}
	}
	parse := findFlagParse(mainFunc)
	if parse == nil {
		return "", fileErrorf(mainGoPath, "has no flag.Parse() call in func main to declare the deltacache flags before")
	}
	checks := lastHealthCheck(mainFunc, mgrName)
	if checks == nil {
		return "", fileErrorf(mainGoPath, "has no `if err := %s.AddReadyzCheck(...)` (or AddHealthzCheck) "+
			"in func main to add the informer checks after", mgrName)
	}

	e := &textEdit{fset: fset, src: src}
	e.insertImports(file)
	e.insertBeforeLine(parse.Pos(), flagDecls(keys))
	e.insertAfterLine(newCacheAnchor(opts), newCacheField)
	e.insertAfterLine(checks.End(), healthChecks(mgrName))
	e.insertAt(len(src), labelKeysFunc)
	out, err := format.Source([]byte(e.apply()))
	if err != nil {
		return "", fileErrorf(mainGoPath, "the edited file does not format: %v", err)
	}
	return string(out), nil
}

// addedNames are the identifiers the setup declares in main.go.
var addedNames = []string{"labelIndexes", "informerStallTimeout", "labelKeys"}

// usesName reports whether an identifier called name appears anywhere in file.
func usesName(file *ast.File, name string) bool {
	found := false
	ast.Inspect(file, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Name == name {
			found = true
		}
		return !found
	})
	return found
}

// findMain returns the file's func main, or nil.
func findMain(file *ast.File) *ast.FuncDecl {
	for _, decl := range file.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "main" {
			return fn
		}
	}
	return nil
}

// findNewManager returns the `ctrl.NewManager(cfg, ctrl.Options{...})` call of an
// assignment in fn, and the name of the variable it assigns the manager to.
func findNewManager(fn *ast.FuncDecl) (*ast.CallExpr, string) {
	var call *ast.CallExpr
	var name string
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		assign, ok := n.(*ast.AssignStmt)
		if !ok || call != nil || len(assign.Rhs) != 1 || len(assign.Lhs) == 0 {
			return call == nil
		}
		c, ok := assign.Rhs[0].(*ast.CallExpr)
		if !ok || !isSelector(c.Fun, "ctrl", "NewManager") || len(c.Args) != 2 {
			return true
		}
		lit, ok := c.Args[1].(*ast.CompositeLit)
		if !ok || !isSelector(lit.Type, "ctrl", "Options") {
			return true
		}
		call, name = c, identName(assign.Lhs[0])
		return false
	})
	return call, name
}

// findFlagParse returns the `flag.Parse()` statement directly in fn's body, or nil.
func findFlagParse(fn *ast.FuncDecl) ast.Stmt {
	for _, stmt := range fn.Body.List {
		if expr, ok := stmt.(*ast.ExprStmt); ok {
			if c, ok := expr.X.(*ast.CallExpr); ok && isSelector(c.Fun, "flag", "Parse") {
				return stmt
			}
		}
	}
	return nil
}

// lastHealthCheck returns the last `if err := mgr.AddReadyzCheck(...)` or AddHealthzCheck
// statement directly in fn's body, or nil.
func lastHealthCheck(fn *ast.FuncDecl, mgr string) ast.Stmt {
	var last ast.Stmt
	for _, stmt := range fn.Body.List {
		ifStmt, ok := stmt.(*ast.IfStmt)
		if !ok || ifStmt.Init == nil {
			continue
		}
		assign, ok := ifStmt.Init.(*ast.AssignStmt)
		if !ok || len(assign.Rhs) != 1 {
			continue
		}
		if c, ok := assign.Rhs[0].(*ast.CallExpr); ok &&
			(isSelector(c.Fun, mgr, "AddReadyzCheck") || isSelector(c.Fun, mgr, "AddHealthzCheck")) {
			last = stmt
		}
	}
	return last
}

// newCacheAnchor is the node NewCache goes after: the literal's opening brace, so that
// NewCache and its comment come first and join the alignment of the fields kubebuilder
// wrote, none of which go/format then re-aligns (after the Scheme field, the comment would
// split Scheme from the others).
func newCacheAnchor(opts *ast.CompositeLit) token.Pos {
	return opts.Lbrace
}

// importPath reports whether file imports path.
func importPath(file *ast.File, path string) bool {
	for _, spec := range file.Imports {
		if p, _ := strconv.Unquote(spec.Path.Value); p == path {
			return true
		}
	}
	return false
}

func isSelector(expr ast.Expr, pkg, name string) bool {
	sel, ok := expr.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == name && identName(sel.X) == pkg
}

func identName(expr ast.Expr) string {
	if id, ok := expr.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// flagDecls declares the flags deltacache adds to the manager, the label keys the plugin
// was given being the default of --label-indexes.
func flagDecls(keys []string) string {
	return fmt.Sprintf(`	var labelIndexes string
	var informerStallTimeout time.Duration
	flag.StringVar(&labelIndexes, "label-indexes", %q,
		"Comma-separated label keys that deltacache indexes for every cached kind: a List that selects "+
			"key=value (or key in (...)) on one of them reads the index instead of scanning.")
	flag.DurationVar(&informerStallTimeout, "informer-stall-timeout", dcache.DefaultStallTimeout,
		"The healthz check fails when a synced informer has not heard from the API server (no event, bookmark "+
			"or successful watch) for longer than this.")
`, strings.Join(keys, ","))
}

const newCacheField = `		// deltacache's informer cache serves every Get and List of the manager's client, and
		// answers Lists by the --label-indexes keys from an index instead of a scan.
		NewCache: dcache.NewWith(dcache.WithLabelIndexes(labelKeys(labelIndexes)...)),
`

func healthChecks(mgr string) string {
	return strings.ReplaceAll(`	// Liveness also fails when an informer that had synced hears nothing from the API
	// server for --informer-stall-timeout; readiness waits until every informer of the
	// cache has synced, and names the kinds that have not and their last errors
	// (GET /readyz/informers shows them).
	if err := mgr.AddHealthzCheck("informers", dcache.HealthzCheck(mgr.GetCache(), informerStallTimeout)); err != nil {
		setupLog.Error(err, "Failed to set up informer health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("informers", dcache.ReadyzCheck(mgr.GetCache())); err != nil {
		setupLog.Error(err, "Failed to set up informer ready check")
		os.Exit(1)
	}
`, "mgr.", mgr+".")
}

const labelKeysFunc = `
// labelKeys splits a --label-indexes value ("app,tier") into label keys, without empty ones.
func labelKeys(flagValue string) []string {
	return strings.FieldsFunc(flagValue, func(r rune) bool { return r == ',' || r == ' ' })
}
`
