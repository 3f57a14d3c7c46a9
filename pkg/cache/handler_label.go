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

package cache

import (
	"reflect"
	"regexp"
	"runtime"
	"strings"

	toolscache "k8s.io/client-go/tools/cache"
)

// crSourcePackage is the package of the handler controller-runtime's source.Kind and
// source.Informer register: *source.EventHandler[object, request].
const crSourcePackage = "sigs.k8s.io/controller-runtime/pkg/internal/source"

// packagePrefix matches the import path prefix of a qualified name.
var packagePrefix = regexp.MustCompile(`[\w.~-]+/`)

// handlerLabel is Options.HandlerLabel of the cache's informers: the "handler" label
// of a registration's deltacache_handler_* series. Every controller-runtime controller
// registers the same Go type, *source.EventHandler, and controller-runtime passes
// nothing that names the controller (HandlerOptions holds only source.Kind's static
// logger), so the label names what the handler enqueues, read from the handler it
// wraps: "source.Kind handler.TypedEnqueueRequestForObject" (For),
// "source.Kind handler.TypedFuncs" (Owns, whose owner handler hides behind the
// method values WithLowPriorityWhenUnchanged wraps), "source.Kind
// handler.TypedFuncs(controller.setup.func1)" (handler.Funcs of your own functions),
// "source.Kind handler.enqueueRequestsFromMapFunc(controller.(*AppReconciler).mapPods-fm)"
// (Watches with a map function). Two controllers whose handlers still look alike get
// "#2" (the informer makes labels unique). Other handlers: "" (the informer's default,
// their Go type or HandlerName).
func handlerLabel(h toolscache.ResourceEventHandler) string {
	v := reflect.ValueOf(h)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return ""
	}
	t := v.Type().Elem()
	if t.PkgPath() != crSourcePackage || !strings.HasPrefix(t.Name(), "EventHandler[") {
		return ""
	}
	inner := v.Elem().FieldByName("handler")
	if !inner.IsValid() || inner.Kind() != reflect.Interface || inner.IsNil() {
		return "source.Kind"
	}
	inner = inner.Elem()
	label := "source.Kind " + shortTypeName(inner.Type())
	if inner.Kind() == reflect.Pointer && !inner.IsNil() {
		inner = inner.Elem()
	}
	if inner.Kind() != reflect.Struct {
		return label
	}
	if gk := inner.FieldByName("groupKind"); gk.IsValid() && gk.Kind() == reflect.Struct {
		group, kind := gk.FieldByName("Group"), gk.FieldByName("Kind")
		if kind.IsValid() && kind.Kind() == reflect.String && kind.String() != "" {
			name := kind.String()
			if group.IsValid() && group.Kind() == reflect.String && group.String() != "" {
				name += "." + group.String()
			}
			return label + "(" + name + ")"
		}
	}
	if fn := inner.FieldByName("toRequests"); fn.IsValid() && fn.Kind() == reflect.Func && !fn.IsNil() {
		return label + "(" + funcName(fn) + ")"
	}
	// handler.TypedFuncs, which WithLowPriorityWhenUnchanged (and so Owns) wraps around
	// the methods of the handler it was given: name that handler.
	for _, field := range []string{"CreateFunc", "UpdateFunc", "DeleteFunc", "GenericFunc"} {
		if fn := inner.FieldByName(field); fn.IsValid() && fn.Kind() == reflect.Func && !fn.IsNil() {
			name := funcName(fn)
			if recv, ok := methodValueReceiver(name); ok {
				return "source.Kind " + recv
			}
			if strings.HasSuffix(name, "-fm") {
				// A method value of an interface (WithLowPriorityWhenUnchanged's):
				// the handler behind it cannot be read.
				return label
			}
			return label + "(" + name + ")"
		}
	}
	return label
}

// typeArgs matches one level of type arguments in a qualified function name.
var typeArgs = regexp.MustCompile(`\[[^\[\]]*\]`)

// funcName is the name of fn's function with package paths reduced to package names
// and type arguments left out: "controller.(*AppReconciler).mapPods-fm".
func funcName(fn reflect.Value) string {
	f := runtime.FuncForPC(fn.Pointer())
	if f == nil {
		return "func"
	}
	name := packagePrefix.ReplaceAllString(f.Name(), "")
	for typeArgs.MatchString(name) {
		name = typeArgs.ReplaceAllString(name, "")
	}
	return name
}

// methodValueReceiver returns the receiver type of a method value's function name,
// "handler.(*enqueueRequestForOwner).Create-fm" → "handler.enqueueRequestForOwner".
func methodValueReceiver(name string) (string, bool) {
	pkg, rest, ok := strings.Cut(name, ".(*")
	if !ok || !strings.HasSuffix(rest, "-fm") {
		return "", false
	}
	recv, _, ok := strings.Cut(rest, ").")
	return pkg + "." + recv, ok
}

// shortTypeName is t's name (pointers dereferenced) with its package name (not path)
// and without type arguments: "handler.TypedEnqueueRequestForObject".
func shortTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name, _, _ := strings.Cut(t.Name(), "[")
	pkg := t.PkgPath()
	if i := strings.LastIndex(pkg, "/"); i >= 0 {
		pkg = pkg[i+1:]
	}
	if pkg == "" {
		return t.String()
	}
	return pkg + "." + name
}
