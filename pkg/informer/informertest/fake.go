// Package informertest provides a scriptable fake ListerWatcher for tests of
// informers and of the caches built on them, and Cluster, a seeded population
// of Pods and ConfigMaps shaped like a production cluster's (cluster.go) for
// measuring storage on objects that are not all alike.
//
// A Fake is two things at once:
//
//   - a tiny apiserver: Create, Update and Delete change its state and assign
//     resourceVersions; unscripted lists are served from that state (sorted
//     by key, paginated with continue tokens), unscripted watches replay the
//     changes after the requested RV and then follow live changes;
//     Compact makes older RVs answer 410 Expired, ExpireContinueTokens makes
//     continuation pages answer 410;
//   - a script: ScriptList and ScriptWatch queue exact answers (pages with
//     RVs and continue tokens, errors, watch streams with events, bookmarks,
//     errors, closes, stalls) that are used, in order, before the state.
//
// Every request is recorded with its ListOptions.
package informertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// Verbs of recorded requests.
const (
	VerbList  = "list"
	VerbWatch = "watch"
)

// Request is one recorded list or watch call.
type Request struct {
	Verb    string
	Options metav1.ListOptions
}

// ListResponse is a scripted answer to one LIST request: either Err, or a
// page of Items at ResourceVersion with an optional Continue token.
type ListResponse struct {
	Items           []runtime.Object
	ResourceVersion string
	Continue        string
	// ShardInfo, if set, is the page's ListMeta.ShardInfo (a server that
	// applied a shard selector, KEP-5866).
	ShardInfo *metav1.ShardInfo
	Err       error
}

// WatchResponse is a scripted answer to one WATCH request: either Err, or a
// Stream that first delivers Events, then closes if Close is set, and
// otherwise stays open (silent: a stall, unless the test sends more through
// Fake.Watches or WaitForWatch).
type WatchResponse struct {
	Err    error
	Events []watch.Event
	Close  bool
}

// Fake is a scriptable toolscache.ListerWatcher(WithContext). The zero value
// is not usable; use New.
type Fake struct {
	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every recorded request
	lists    []ListResponse
	watches  []WatchResponse
	requests []Request
	streams  []*Stream

	objects     map[string]runtime.Object
	rv          uint64
	history     []watch.Event // state changes, RV ascending
	compactedRV uint64        // watches from an RV below this get 410
	snapshots   map[int]snapshot
	nextSnap    int
	expireConts bool
	watchList   bool
	example     runtime.Object
	// shardMatch, if set, applies shard selectors (see ServeShardSelector).
	shardMatch ShardMatchFunc
	// bookmarks: see ServeBookmarks.
	bookmarks bool
}

// ServeBookmarks makes unscripted watches that allow bookmarks receive one
// at the current RV right after the changes they replay, as the API
// server's watch cache sends one shortly before a short watch's deadline
// (what a warm start waits for). Default false: no bookmark is sent unless
// the test calls SendBookmark.
func (f *Fake) ServeBookmarks(serve bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bookmarks = serve
}

// ShardMatchFunc reports whether obj is selected by the shardSelector
// parameter selector (never ""); an error answers the request with 400.
type ShardMatchFunc func(selector string, obj runtime.Object) (bool, error)

// ServeShardSelector makes unscripted lists and watches honour the
// shardSelector parameter (KEP-5866) with match, as a server with the
// ShardedListAndWatch gate does: only matching objects are listed (each page
// carries ShardInfo echoing the selector) and watched. nil (the default)
// ignores the parameter, as a server without the gate does.
func (f *Fake) ServeShardSelector(match ShardMatchFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shardMatch = match
}

// selectedLocked reports whether a request with opts gets obj.
func (f *Fake) selectedLocked(opts metav1.ListOptions, obj runtime.Object) (bool, error) {
	if f.shardMatch == nil || opts.ShardSelector == "" {
		return true, nil
	}
	return f.shardMatch(opts.ShardSelector, obj)
}

// shardedLocked returns objs without those a request with opts does not get.
func (f *Fake) shardedLocked(opts metav1.ListOptions, objs []runtime.Object) ([]runtime.Object, error) {
	out := objs[:0:0]
	for _, o := range objs {
		ok, err := f.selectedLocked(opts, o)
		if err != nil {
			return nil, apierrors.NewBadRequest("invalid shard selector: " + err.Error())
		}
		if ok {
			out = append(out, o)
		}
	}
	return out, nil
}

var (
	_ toolscache.ListerWatcher            = (*Fake)(nil)
	_ toolscache.ListerWatcherWithContext = (*Fake)(nil)
)

// New returns a Fake with an empty state at resourceVersion 1. example is an
// object of the served type (e.g. &corev1.Pod{}); it is used for bookmarks.
func New(example runtime.Object) *Fake {
	return &Fake{
		changed:   make(chan struct{}),
		objects:   map[string]runtime.Object{},
		rv:        1,
		snapshots: map[int]snapshot{},
		example:   example,
	}
}

// IsWatchListSemanticsUnSupported returns true unless ServeWatchList(true)
// was called.
func (f *Fake) IsWatchListSemanticsUnSupported() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.watchList
}

// ServeWatchList makes unscripted watches honour sendInitialEvents=true
// (KEP-3157): the current state as ADDED events, then a bookmark annotated
// k8s.io/initial-events-end at the current RV, then live changes. As with
// resourceVersionMatch=NotOlderThan, any RV not beyond the current one is
// accepted, also one older than a compaction. Without it, sendInitialEvents
// is ignored as an old server would.
func (f *Fake) ServeWatchList(serve bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watchList = serve
}

// ScriptList queues answers for the next LIST requests.
func (f *Fake) ScriptList(responses ...ListResponse) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists = append(f.lists, responses...)
}

// ScriptWatch queues answers for the next WATCH requests.
func (f *Fake) ScriptWatch(responses ...WatchResponse) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watches = append(f.watches, responses...)
}

// List is ListWithContext with a background context.
func (f *Fake) List(opts metav1.ListOptions) (runtime.Object, error) {
	return f.ListWithContext(context.Background(), opts)
}

// Watch is WatchWithContext with a background context.
func (f *Fake) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return f.WatchWithContext(context.Background(), opts)
}

// ListWithContext records the request and answers with the next scripted
// ListResponse, or from the state.
func (f *Fake) ListWithContext(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recordLocked(VerbList, opts)
	if len(f.lists) > 0 {
		r := f.lists[0]
		f.lists = f.lists[1:]
		if r.Err != nil {
			return nil, r.Err
		}
		l := newList(r.Items, r.ResourceVersion, r.Continue)
		l.ShardInfo = r.ShardInfo
		return l, nil
	}
	return f.listStateLocked(opts)
}

// WatchWithContext records the request and answers with the next scripted
// WatchResponse, or with a live stream of the state's changes after
// opts.ResourceVersion.
func (f *Fake) WatchWithContext(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.watches) > 0 {
		r := f.watches[0]
		f.watches = f.watches[1:]
		if r.Err != nil {
			f.recordLocked(VerbWatch, opts)
			return nil, r.Err
		}
		s := newStream(opts)
		for _, e := range r.Events {
			s.Send(e)
		}
		if r.Close {
			s.Close()
		}
		f.streams = append(f.streams, s)
		f.recordLocked(VerbWatch, opts)
		return s, nil
	}
	from := uint64(0)
	initialEvents := f.watchList && opts.SendInitialEvents != nil && *opts.SendInitialEvents
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		n, err := strconv.ParseUint(opts.ResourceVersion, 10, 64)
		if err != nil {
			f.recordLocked(VerbWatch, opts)
			return nil, apierrors.NewBadRequest("invalid resourceVersion " + opts.ResourceVersion)
		}
		if n < f.compactedRV && !initialEvents {
			f.recordLocked(VerbWatch, opts)
			return nil, ErrExpired()
		}
		if n > f.rv {
			f.recordLocked(VerbWatch, opts)
			return nil, ErrTooLargeResourceVersion()
		}
		from = n
	}
	initial, err := f.shardedLocked(opts, f.sortedLocked())
	if err != nil {
		f.recordLocked(VerbWatch, opts)
		return nil, err
	}
	s := newStream(opts)
	s.live = true
	if from == 0 || initialEvents {
		for _, obj := range initial {
			s.Add(obj.DeepCopyObject())
		}
		if initialEvents {
			s.Send(InitialEventsEndBookmark(f.example, strconv.FormatUint(f.rv, 10)))
		}
	} else {
		for _, e := range f.history {
			if ok, _ := f.selectedLocked(opts, e.Object); ok && eventRV(e) > from {
				s.Send(watch.Event{Type: e.Type, Object: e.Object.DeepCopyObject()})
			}
		}
		if f.bookmarks && opts.AllowWatchBookmarks {
			s.Send(BookmarkEvent(f.example, strconv.FormatUint(f.rv, 10)))
		}
	}
	f.streams = append(f.streams, s)
	f.recordLocked(VerbWatch, opts)
	return s, nil
}

func (f *Fake) recordLocked(verb string, opts metav1.ListOptions) {
	f.requests = append(f.requests, Request{Verb: verb, Options: opts})
	close(f.changed)
	f.changed = make(chan struct{})
}

// Requests returns a copy of every request so far.
func (f *Fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.requests...)
}

// RequestsOf returns the options of every request with the given verb.
func (f *Fake) RequestsOf(verb string) []metav1.ListOptions {
	var out []metav1.ListOptions
	for _, r := range f.Requests() {
		if r.Verb == verb {
			out = append(out, r.Options)
		}
	}
	return out
}

// Watches returns every stream opened so far (scripted and live).
func (f *Fake) Watches() []*Stream {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Stream(nil), f.streams...)
}

// WaitFor blocks until cond holds for the recorded requests, or ctx ends.
func (f *Fake) WaitFor(ctx context.Context, cond func(reqs []Request) bool) ([]Request, error) {
	for {
		f.mu.Lock()
		reqs := append([]Request(nil), f.requests...)
		ch := f.changed
		f.mu.Unlock()
		if cond(reqs) {
			return reqs, nil
		}
		select {
		case <-ctx.Done():
			return reqs, fmt.Errorf("waiting for requests (have %d): %w", len(reqs), ctx.Err())
		case <-ch:
		}
	}
}

// WaitForRequests blocks until at least n requests were made.
func (f *Fake) WaitForRequests(ctx context.Context, n int) ([]Request, error) {
	return f.WaitFor(ctx, func(r []Request) bool { return len(r) >= n })
}

// WaitForWatch blocks until the i-th watch (0-based, counting scripted and
// live ones) is open, and returns its stream.
func (f *Fake) WaitForWatch(ctx context.Context, i int) (*Stream, error) {
	// WaitFor calls cond without f.mu; streams are appended under it.
	_, err := f.WaitFor(ctx, func([]Request) bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.streams) > i
	})
	if err != nil {
		return nil, err
	}
	return f.Watches()[i], nil
}

// --- state ---

// ResourceVersion returns the state's current RV.
func (f *Fake) ResourceVersion() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strconv.FormatUint(f.rv, 10)
}

// Create stores a copy of obj at the next RV and sends ADDED to live
// watches; it returns the stored copy. It panics if obj has no metadata.
func (f *Fake) Create(obj runtime.Object) runtime.Object {
	return f.change(watch.Added, obj)
}

// Update stores a copy of obj at the next RV and sends MODIFIED.
func (f *Fake) Update(obj runtime.Object) runtime.Object {
	return f.change(watch.Modified, obj)
}

// Delete removes obj's key at the next RV and sends DELETED with the last
// state (its RV set to the deletion's RV).
func (f *Fake) Delete(obj runtime.Object) runtime.Object {
	return f.change(watch.Deleted, obj)
}

// Get returns the stored object of namespace/name (or name).
func (f *Fake) Get(key string) (runtime.Object, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	obj, ok := f.objects[key]
	return obj, ok
}

// Objects returns copies of the stored objects sorted by key.
func (f *Fake) Objects() []runtime.Object {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sortedLocked()
}

func (f *Fake) change(t watch.EventType, obj runtime.Object) runtime.Object {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := keyOf(obj)
	if t == watch.Deleted {
		last, ok := f.objects[key]
		if !ok {
			panic(fmt.Sprintf("informertest: delete of absent %s", key))
		}
		obj = last
		delete(f.objects, key)
	}
	f.rv++
	stored := obj.DeepCopyObject()
	mustAccessor(stored).SetResourceVersion(strconv.FormatUint(f.rv, 10))
	if t != watch.Deleted {
		f.objects[key] = stored
	}
	e := watch.Event{Type: t, Object: stored}
	f.history = append(f.history, e)
	for _, s := range f.streams {
		if ok, _ := f.selectedLocked(s.Options, stored); s.live && ok {
			s.Send(watch.Event{Type: t, Object: stored.DeepCopyObject()})
		}
	}
	return stored.DeepCopyObject()
}

// SendBookmark sends a BOOKMARK at the current RV to every live watch.
func (f *Fake) SendBookmark() {
	f.mu.Lock()
	defer f.mu.Unlock()
	rv := strconv.FormatUint(f.rv, 10)
	for _, s := range f.streams {
		if s.live {
			s.Send(BookmarkEvent(f.example, rv))
		}
	}
}

// CloseWatches ends every open live watch, as a server timeout would.
func (f *Fake) CloseWatches() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.streams {
		if s.live {
			s.Close()
		}
	}
}

// Compact forgets the history: watches from an RV below the current one get
// 410 Expired, and live watches receive an Expired ERROR event and close.
func (f *Fake) Compact() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.compactedRV = f.rv
	f.history = nil
	for _, s := range f.streams {
		if s.live {
			s.Error(ErrExpired())
			s.Close()
		}
	}
}

// ExpireContinueTokens makes every later continuation page answer 410
// Expired (until ExpireContinueTokens(false)).
func (f *Fake) ExpireContinueTokens(expire bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expireConts = expire
}

func (f *Fake) listStateLocked(opts metav1.ListOptions) (runtime.Object, error) {
	var snap snapshot
	var id, offset int
	if opts.Continue != "" {
		if f.expireConts {
			return nil, ErrExpired()
		}
		if _, err := fmt.Sscanf(opts.Continue, "%d/%d", &id, &offset); err != nil {
			return nil, apierrors.NewBadRequest("invalid continue token")
		}
		var ok bool
		if snap, ok = f.snapshots[id]; !ok {
			return nil, ErrExpired()
		}
	} else {
		f.nextSnap++
		id = f.nextSnap
		objs, err := f.shardedLocked(opts, f.sortedLocked())
		if err != nil {
			return nil, err
		}
		snap = snapshot{objects: objs, rv: strconv.FormatUint(f.rv, 10)}
	}
	end := len(snap.objects)
	cont := ""
	if opts.Limit > 0 && offset+int(opts.Limit) < end {
		end = offset + int(opts.Limit)
		cont = fmt.Sprintf("%d/%d", id, end)
		f.snapshots[id] = snap
	} else {
		delete(f.snapshots, id)
	}
	items := make([]runtime.Object, 0, end-offset)
	for _, o := range snap.objects[offset:end] {
		items = append(items, o.DeepCopyObject())
	}
	l := newList(items, snap.rv, cont)
	if f.shardMatch != nil && opts.ShardSelector != "" {
		l.ShardInfo = &metav1.ShardInfo{Selector: opts.ShardSelector}
	}
	return l, nil
}

// snapshot is the state a paginated list is served from.
type snapshot struct {
	objects []runtime.Object
	rv      string
}

func (f *Fake) sortedLocked() []runtime.Object {
	keys := make([]string, 0, len(f.objects))
	for k := range f.objects {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]runtime.Object, 0, len(keys))
	for _, k := range keys {
		out = append(out, f.objects[k].DeepCopyObject())
	}
	return out
}

// --- errors ---

var podsGR = schema.GroupResource{Resource: "pods"}

// ErrExpired is the apiserver's 410 "too old resource version".
func ErrExpired() error {
	return apierrors.NewResourceExpired("too old resource version: 1 (100)")
}

// ErrGone is a 410 Gone status (reason Gone, not Expired).
func ErrGone() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonGone, Message: "gone",
	}}
}

// ErrTooLargeResourceVersion is the apiserver's "Too large resource version"
// (a Timeout status with the ResourceVersionTooLarge cause).
func ErrTooLargeResourceVersion() error {
	err := apierrors.NewTimeoutError("Too large resource version: 1000, current: 10", 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "Too large resource version",
	}}
	return err
}

// ErrForbidden is a 403 for listing pods.
func ErrForbidden() error {
	return apierrors.NewForbidden(podsGR, "", errors.New("RBAC: access denied"))
}

// ErrNotFound is a 404 "the server could not find the requested resource".
func ErrNotFound() error { return apierrors.NewNotFound(podsGR, "") }

// ErrInternal is a 500 InternalError.
func ErrInternal() error { return apierrors.NewInternalError(errors.New("etcd unavailable")) }

// --- helpers ---

func newList(items []runtime.Object, rv, cont string) *metav1.List {
	l := &metav1.List{ListMeta: metav1.ListMeta{ResourceVersion: rv, Continue: cont}}
	for _, it := range items {
		l.Items = append(l.Items, runtime.RawExtension{Object: it})
	}
	return l
}

func keyOf(obj runtime.Object) string {
	m := mustAccessor(obj)
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}

func mustAccessor(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("informertest: %T has no object metadata: %v", obj, err))
	}
	return m
}

func eventRV(e watch.Event) uint64 {
	n, _ := strconv.ParseUint(mustAccessor(e.Object).GetResourceVersion(), 10, 64)
	return n
}

func newEmpty(obj runtime.Object) (runtime.Object, bool) {
	t := reflect.TypeOf(obj)
	if t.Kind() != reflect.Pointer {
		return nil, false
	}
	return reflect.TypeAssert[runtime.Object](reflect.New(t.Elem()))
}
