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
	"go/token"
	"slices"
	"strconv"
	"strings"
)

// textEdit collects insertions into a Go source at offsets found through its AST, and
// applies them at once: the file's text, comments and layout stay as they are, and
// go/format then aligns what was inserted.
type textEdit struct {
	fset    *token.FileSet
	src     string
	inserts []insertion
}

type insertion struct {
	offset int
	text   string
}

func (e *textEdit) insertAt(offset int, text string) {
	e.inserts = append(e.inserts, insertion{offset, text})
}

// insertBeforeLine inserts text at the start of the line holding pos.
func (e *textEdit) insertBeforeLine(pos token.Pos, text string) {
	offset := e.fset.Position(pos).Offset
	e.insertAt(strings.LastIndexByte(e.src[:offset], '\n')+1, text)
}

// insertAfterLine inserts text at the start of the line after the one holding pos.
func (e *textEdit) insertAfterLine(pos token.Pos, text string) {
	offset := e.fset.Position(pos).Offset
	if nl := strings.IndexByte(e.src[offset:], '\n'); nl >= 0 {
		offset += nl + 1
	} else {
		offset = len(e.src)
		text = "\n" + text
	}
	e.insertAt(offset, text)
}

// insertImports adds deltacache's pkg/cache as dcache before kubebuilder's imports
// marker (after the last import without it), and the standard packages the inserted code
// uses that the file does not import yet, after the file's first standard import (go/format
// sorts them into place).
func (e *textEdit) insertImports(file *ast.File) {
	// A group of its own, which the imports kubebuilder adds at the marker later join.
	dcacheImport := "\n\tdcache \"" + cachePackage + "\"\n"
	if marker := strings.Index(e.src, importsMarker); marker >= 0 {
		e.insertAt(strings.LastIndexByte(e.src[:marker], '\n')+1, dcacheImport)
	} else {
		e.insertAfterLine(file.Imports[len(file.Imports)-1].End(), dcacheImport)
	}
	var std []string
	for _, path := range []string{"os", "strings", "time"} {
		if !importPath(file, path) {
			std = append(std, "\t"+strconv.Quote(path)+"\n")
		}
	}
	if len(std) == 0 {
		return
	}
	first := slices.IndexFunc(file.Imports, func(spec *ast.ImportSpec) bool {
		p, _ := strconv.Unquote(spec.Path.Value)
		return !strings.Contains(p, ".")
	})
	if first < 0 {
		first = 0
	}
	e.insertBeforeLine(file.Imports[first].Pos(), strings.Join(std, ""))
}

// apply returns the source with every insertion made; insertions at one offset keep the
// order they were added in.
func (e *textEdit) apply() string {
	slices.SortStableFunc(e.inserts, func(a, b insertion) int { return a.offset - b.offset })
	var out strings.Builder
	last := 0
	for _, ins := range e.inserts {
		out.WriteString(e.src[last:ins.offset])
		out.WriteString(ins.text)
		last = ins.offset
	}
	out.WriteString(e.src[last:])
	return out.String()
}
