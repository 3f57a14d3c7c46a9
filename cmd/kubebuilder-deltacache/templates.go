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
	"embed"
	"go/format"
	"strconv"
	"strings"
	"text/template"
	"time"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

var templates = template.Must(template.ParseFS(templateFS, "templates/*.tmpl"))

const boilerplatePath = "hack/boilerplate.go.txt"

// testFiles are the files of the envtest suite the plugin scaffolds, by project path and
// template name.
var testFiles = map[string]string{
	testDir + "suite_test.go": "suite_test.go.tmpl",
	testDir + "cache_test.go": "cache_test.go.tmpl",
}

// testDir is the package of the suite.
const testDir = "internal/deltacache/"

// renderTestFiles renders the suite with the project's license header (hack/boilerplate.go.txt,
// YEAR replaced, as kubebuilder writes it) when it has one. The suite reads its label keys
// from cmd/main.go's --label-indexes default.
func renderTestFiles(universe map[string]string) (map[string]string, error) {
	data := struct{ Boilerplate string }{}
	if header := strings.TrimSpace(universe[boilerplatePath]); header != "" {
		data.Boilerplate = strings.ReplaceAll(header, "YEAR", strconv.Itoa(time.Now().Year())) + "\n\n"
	}
	out := map[string]string{}
	for path, name := range testFiles {
		var buf bytes.Buffer
		if err := templates.ExecuteTemplate(&buf, name, data); err != nil {
			return nil, err
		}
		src, err := format.Source(buf.Bytes())
		if err != nil {
			return nil, fileErrorf(path, "does not format: %v", err)
		}
		out[path] = string(src)
	}
	return out, nil
}
