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

import "fmt"

// fileError is a problem with one file of the project: the plugin changes nothing then.
type fileError struct {
	// File is the project path, e.g. "cmd/main.go".
	File string
	Msg  string
}

func (e *fileError) Error() string { return e.File + ": " + e.Msg }

func fileErrorf(file, format string, args ...any) error {
	return &fileError{File: file, Msg: fmt.Sprintf(format, args...)}
}
