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

package cache_test

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What the combination suite records: the events a handler receives, and the server's
// sequence of writes, to compare them.

// comboEvent is one notification a handler received, of the object's key.
type comboEvent struct {
	typ string // add, update, delete
	uid types.UID
	rv  string
	// terminating: the object has a deletionTimestamp (a Pod deleted with a grace
	// period of 0 gets one, at a version of its own, before it is gone).
	terminating bool
}

func (e comboEvent) String() string { return fmt.Sprintf("%s %s@%s", e.typ, e.uid, e.rv) }

// comboHanded is one object a handler was handed: as what (add, update-old,
// update-new, delete) and the object itself, as received (not copied).
type comboHanded struct {
	as  string
	obj runtime.Object
}

// comboRecorder is an event handler that records, per key, the events it receives
// and, per uid@resourceVersion, the objects. A delay makes it slow, and hold makes it
// wait, so that notifications queue up behind it (and may be merged).
type comboRecorder struct {
	delay time.Duration
	held  sync.Mutex // locked by hold: every call waits for release
	// waiting counts the calls waiting for release.
	waiting atomic.Int32

	mu     sync.Mutex
	seq    map[string][]comboEvent  // key → events in order
	handed map[string][]comboHanded // uid@rv → objects handed out
	bad    []string                 // objects that are not client.Objects
}

func newComboRecorder(delay time.Duration) *comboRecorder {
	return &comboRecorder{delay: delay, seq: map[string][]comboEvent{}, handed: map[string][]comboHanded{}}
}

func (r *comboRecorder) note(typ, as string, obj any, recordEvent bool) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, ok := obj.(client.Object)
	if !ok {
		r.mu.Lock()
		r.bad = append(r.bad, fmt.Sprintf("%s of a %T", typ, obj))
		r.mu.Unlock()
		return
	}
	key := o.GetNamespace() + "/" + o.GetName()
	r.mu.Lock()
	defer r.mu.Unlock()
	if recordEvent {
		r.seq[key] = append(r.seq[key], comboEvent{typ: typ, uid: o.GetUID(), rv: o.GetResourceVersion(),
			terminating: o.GetDeletionTimestamp() != nil})
	}
	id := string(o.GetUID()) + "@" + o.GetResourceVersion()
	r.handed[id] = append(r.handed[id], comboHanded{as: as, obj: o})
}

// hold makes the handler's calls wait until release: the notifications of the
// meantime queue up in its queue, as behind a busy handler.
func (r *comboRecorder) hold() { r.held.Lock() }

// release lets the handler's calls go on.
func (r *comboRecorder) release() { r.held.Unlock() }

func (r *comboRecorder) pause() {
	r.waiting.Add(1)
	r.held.Lock()
	r.held.Unlock() //nolint:staticcheck // waits for release
	r.waiting.Add(-1)
	time.Sleep(r.delay)
}

func (r *comboRecorder) OnAdd(obj any, _ bool) {
	r.pause()
	r.note("add", "add", obj, true)
}

func (r *comboRecorder) OnUpdate(oldObj, newObj any) {
	r.pause()
	r.note("update", "update-old", oldObj, false)
	r.note("update", "update-new", newObj, true)
}

func (r *comboRecorder) OnDelete(obj any) {
	r.pause()
	r.note("delete", "delete", obj, true)
}

// events returns a copy of the events recorded so far, by key.
func (r *comboRecorder) events() map[string][]comboEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]comboEvent, len(r.seq))
	for k, s := range r.seq {
		out[k] = slices.Clone(s)
	}
	return out
}

// objects returns a copy of the objects handed out so far, by uid@rv.
func (r *comboRecorder) objects() map[string][]comboHanded {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]comboHanded, len(r.handed))
	for k, s := range r.handed {
		out[k] = slices.Clone(s)
	}
	return out
}

// comboLife is one object (one uid) on the server, as the cell's writes made it.
type comboLife struct {
	key     string
	rvs     map[string]bool // resourceVersions it had
	deleted bool
}

// comboHistory is the server's sequence of the cell's writes, by uid.
type comboHistory struct {
	mu    sync.Mutex
	lives map[types.UID]*comboLife
}

func newComboHistory() *comboHistory { return &comboHistory{lives: map[types.UID]*comboLife{}} }

// wrote records obj as the server returned it from a create, update or patch.
func (h *comboHistory) wrote(obj client.Object) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.lives[obj.GetUID()]
	if l == nil {
		l = &comboLife{key: obj.GetNamespace() + "/" + obj.GetName(), rvs: map[string]bool{}}
		h.lives[obj.GetUID()] = l
	}
	l.rvs[obj.GetResourceVersion()] = true
}

// deleted records the deletion of uid.
func (h *comboHistory) deleted(uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if l := h.lives[uid]; l != nil {
		l.deleted = true
	}
}

// snapshot returns a copy of the lives.
func (h *comboHistory) snapshot() map[types.UID]comboLife {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[types.UID]comboLife, len(h.lives))
	for uid, l := range h.lives {
		out[uid] = *l
	}
	return out
}

// comboCheckHandlerSequences checks a handler's events against the server's writes:
//   - every add and update shows a version the object had (its uid at one of its
//     resourceVersions, or, once the object was deleted, its version with a
//     deletionTimestamp, which no write of the test returned), and of an object the
//     handler may be told about (share);
//   - per uid, resourceVersions never go back, and nothing follows its delete;
//   - every delete of a uid in the share is delivered: the handler was told about the
//     object, or could have been;
//   - the last event of every key shows the server's final state (final: key →
//     uid@rv of the objects in the share): that object at that version, or a delete
//     when the key has none.
//
// It returns the differences found.
func comboCheckHandlerSequences(events map[string][]comboEvent, lives map[types.UID]comboLife,
	share func(key string, uid types.UID) bool, final map[string]string,
) []string {
	var out []string
	deletes := map[types.UID]bool{}
	for key, seq := range events {
		last := map[types.UID]uint64{}
		gone := map[types.UID]bool{}
		for _, e := range seq {
			if gone[e.uid] {
				out = append(out, fmt.Sprintf("%s: %v after the delete of uid %s", key, e, e.uid))
			}
			if e.typ == "delete" {
				gone[e.uid], deletes[e.uid] = true, true
				continue
			}
			l, ok := lives[e.uid]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("%s: %v of an object the test never wrote", key, e))
				continue
			case l.key != key:
				out = append(out, fmt.Sprintf("%s: %v of uid %s, whose key is %s", key, e, e.uid, l.key))
			case !l.rvs[e.rv] && !(e.terminating && l.deleted):
				out = append(out, fmt.Sprintf("%s: %v at a resourceVersion the object never had", key, e))
			case !share(key, e.uid):
				out = append(out, fmt.Sprintf("%s: %v of an object outside this replica's share", key, e))
			}
			rv, _ := strconv.ParseUint(e.rv, 10, 64)
			if rv < last[e.uid] {
				out = append(out, fmt.Sprintf("%s: %v after resourceVersion %d of the same uid", key, e, last[e.uid]))
			}
			last[e.uid] = rv
		}
		want, exists := final[key]
		end := seq[len(seq)-1]
		switch {
		case exists && (end.typ == "delete" || string(end.uid)+"@"+end.rv != want):
			out = append(out, fmt.Sprintf("%s: last event %v, the server has %s", key, end, want))
		case !exists && end.typ != "delete":
			out = append(out, fmt.Sprintf("%s: last event %v, the server has no such object in the share", key, end))
		}
	}
	for key, want := range final {
		if _, ok := events[key]; !ok {
			out = append(out, fmt.Sprintf("%s: never notified; the server has %s", key, want))
		}
	}
	for uid, l := range lives {
		if l.deleted && share(l.key, uid) && !deletes[uid] {
			out = append(out, fmt.Sprintf("%s: the delete of uid %s was never delivered", l.key, uid))
		}
	}
	slices.Sort(out)
	return out
}

// comboCompareHanded compares, for every uid@rv both handlers were handed, each object ours
// handed out with the first controller-runtime's did, by reflect.DeepEqual. It returns
// the differences and the number of comparisons per "as" of ours.
func comboCompareHanded(ours, theirs map[string][]comboHanded) (diffs []string, compared map[string]int) {
	compared = map[string]int{}
	for id, handed := range ours {
		other, ok := theirs[id]
		if !ok {
			continue
		}
		for _, h := range handed {
			compared[h.as]++
			if !reflect.DeepEqual(h.obj, other[0].obj) {
				diffs = append(diffs, fmt.Sprintf("%s handed as %s differs from controller-runtime's (as %s): %s",
					id, h.as, other[0].as, comboObjectDiff(h.obj, other[0].obj)))
			}
		}
	}
	slices.Sort(diffs)
	return diffs, compared
}

// comboObjectDiff names the first fields in which a and b differ (for a failure message).
func comboObjectDiff(a, b runtime.Object) string {
	var paths []string
	comboDiffValues(reflect.ValueOf(a), reflect.ValueOf(b), "", &paths)
	if len(paths) > 4 {
		paths = append(paths[:4], "...")
	}
	if len(paths) == 0 {
		return fmt.Sprintf("%T and %T", a, b)
	}
	return fmt.Sprint(paths)
}

// comboDiffValues appends to paths the paths at which a and b differ, down to unexported
// fields (such as resource.Quantity's cached string).
func comboDiffValues(a, b reflect.Value, path string, paths *[]string) {
	if len(*paths) > 4 {
		return
	}
	if !a.IsValid() || !b.IsValid() || a.Type() != b.Type() {
		if a.IsValid() != b.IsValid() || (a.IsValid() && a.Type() != b.Type()) {
			*paths = append(*paths, path+": types differ")
		}
		return
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				*paths = append(*paths, path+": nil on one side")
			}
			return
		}
		comboDiffValues(a.Elem(), b.Elem(), path, paths)
	case reflect.Struct:
		for i := range a.NumField() {
			comboDiffValues(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name, paths)
		}
	case reflect.Slice, reflect.Array:
		if a.Kind() == reflect.Slice && a.IsNil() != b.IsNil() {
			*paths = append(*paths, path+": nil on one side, empty on the other")
			return
		}
		if a.Len() != b.Len() {
			*paths = append(*paths, fmt.Sprintf("%s: %d against %d items", path, a.Len(), b.Len()))
			return
		}
		for i := range a.Len() {
			comboDiffValues(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i), paths)
		}
	case reflect.Map:
		if a.IsNil() != b.IsNil() {
			*paths = append(*paths, path+": nil on one side, empty on the other")
			return
		}
		if a.Len() != b.Len() {
			*paths = append(*paths, fmt.Sprintf("%s: %d against %d entries", path, a.Len(), b.Len()))
			return
		}
		for _, k := range a.MapKeys() {
			comboDiffValues(a.MapIndex(k), b.MapIndex(k), fmt.Sprintf("%s[%v]", path, k), paths)
		}
	default:
		if a.CanInterface() && b.CanInterface() {
			if !reflect.DeepEqual(a.Interface(), b.Interface()) {
				*paths = append(*paths, fmt.Sprintf("%s: %v against %v", path, a.Interface(), b.Interface()))
			}
			return
		}
		if fmt.Sprint(a) != fmt.Sprint(b) { // unexported: compare printed
			*paths = append(*paths, fmt.Sprintf("%s: %v against %v", path, a, b))
		}
	}
}

// comboUIDRV returns obj's "uid@resourceVersion".
func comboUIDRV(obj runtime.Object) string {
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return fmt.Sprintf("<%T>", obj)
	}
	return string(m.GetUID()) + "@" + m.GetResourceVersion()
}
