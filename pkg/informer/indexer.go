package informer

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
)

var _ toolscache.Indexer = (*Indexer)(nil)

// Indexer is a thread-safe key → object store with indexes. It implements
// toolscache.Indexer of client-go v0.37 and is the store behind every
// SharedIndexInformer.
//
// One writer, many readers: inside an informer the pop loop is the only
// writer; everybody else should only read (Get, GetByKey, List, ListKeys,
// ByIndex, Index, IndexKeys, ListIndexFuncValues). The write methods exist
// because toolscache.Store requires them.
//
// Objects are stored and returned as the pointers that were added: callers
// must not mutate them. Returned slices are fresh and may be kept.
//
// Locking: one sync.RWMutex. Index functions run before the write lock is
// taken, so a write holds the lock only for map updates; List and ByIndex
// hold the read lock only while copying pointers. Go's RWMutex blocks new
// readers once a writer waits, so readers cannot starve the writer.
//
// Beyond client-go: the index values a key was filed under are remembered,
// so updates and deletes remove the old entries without re-running index
// functions on the old object, and an index function that fails leaves no
// stale entries behind (client-go panics instead). Empty value buckets are
// dropped.
type Indexer struct {
	keyFunc toolscache.KeyFunc

	// funcs is an immutable snapshot of the index functions, swapped by
	// AddIndexers. Writers read it without the lock to compute index values.
	funcs atomic.Pointer[indexFuncs]

	mu      sync.RWMutex
	items   table
	indices map[string]*index
	rv      string
	// size mirrors len(items.objs) so List can allocate before locking.
	size atomic.Int64
}

// indexFuncs is an immutable, name-sorted set of index functions.
type indexFuncs struct {
	names []string
	fns   []toolscache.IndexFunc
}

// index is one named index: indexed value → (key → object), plus the values
// each key is currently filed under. Buckets hold the objects themselves so
// ByIndex needs no second lookup.
type index struct {
	byValue map[string]map[string]any
	byKey   map[string][]string
}

// indexValues are the values of one object for every index of a snapshot,
// aligned with indexFuncs.names. errs[i] is set if that index function failed.
type indexValues struct {
	funcs  *indexFuncs
	values [][]string
	errs   []error
}

// NewIndexer returns an empty Indexer that computes keys with keyFunc (for
// example toolscache.DeletionHandlingMetaNamespaceKeyFunc) and maintains the
// given indexes. indexers may be nil.
func NewIndexer(keyFunc toolscache.KeyFunc, indexers toolscache.Indexers) *Indexer {
	ix := &Indexer{
		keyFunc: keyFunc,
		items:   newTable(0),
		indices: map[string]*index{},
	}
	names := make([]string, 0, len(indexers))
	for name := range indexers {
		names = append(names, name)
	}
	sort.Strings(names)
	f := &indexFuncs{names: names}
	for _, name := range names {
		f.fns = append(f.fns, indexers[name])
		ix.indices[name] = newIndex()
	}
	ix.funcs.Store(f)
	return ix
}

func newIndex() *index {
	return &index{byValue: map[string]map[string]any{}, byKey: map[string][]string{}}
}

// compute runs every index function of f on obj. It takes no lock.
func (f *indexFuncs) compute(obj any) indexValues {
	v := indexValues{funcs: f, values: make([][]string, len(f.names))}
	for i, fn := range f.fns {
		vals, err := fn(obj)
		if err != nil {
			if v.errs == nil {
				v.errs = make([]error, len(f.names))
			}
			v.errs[i] = err
			continue
		}
		v.values[i] = vals
	}
	return v
}

// Add stores obj under its key, replacing any previous object, and records
// the object's resourceVersion as the store's RV if it is newer. It returns a
// toolscache.KeyError if the key cannot be computed, and an error naming the
// index if an index function fails (the object is stored, but not filed in
// that index).
func (ix *Indexer) Add(obj any) error {
	key, err := ix.keyFunc(obj)
	if err != nil {
		return toolscache.KeyError{Obj: obj, Err: err}
	}
	err = ix.put(key, obj)
	ix.observeRV(obj)
	return err
}

// Update is Add: the store does not distinguish between the two.
func (ix *Indexer) Update(obj any) error { return ix.Add(obj) }

// Delete removes the object with obj's key (obj may be a
// toolscache.DeletedFinalStateUnknown when the key function handles it) and
// removes its index entries. Deleting an absent key is not an error.
func (ix *Indexer) Delete(obj any) error {
	key, err := ix.keyFunc(obj)
	if err != nil {
		return toolscache.KeyError{Obj: obj, Err: err}
	}
	ix.remove(key)
	ix.observeRV(obj)
	return nil
}

// put stores obj under key and refiles it in every index. Index functions
// run before the lock is taken.
func (ix *Indexer) put(key string, obj any) error {
	vals := ix.funcs.Load().compute(obj)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	vals = ix.refreshLocked(vals, obj)
	ix.items.set(key, obj)
	ix.size.Store(int64(len(ix.items.objs)))
	return ix.fileLocked(key, vals, obj)
}

// remove deletes key and its index entries; it reports whether key was present.
func (ix *Indexer) remove(key string) bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if !ix.items.del(key) {
		return false
	}
	ix.size.Store(int64(len(ix.items.objs)))
	for _, idx := range ix.indices {
		idx.unfile(key)
	}
	return true
}

// refreshLocked recomputes vals if AddIndexers swapped the index functions
// after vals were computed.
func (ix *Indexer) refreshLocked(vals indexValues, obj any) indexValues {
	if cur := ix.funcs.Load(); cur != vals.funcs {
		return cur.compute(obj)
	}
	return vals
}

// fileLocked files key (holding obj) under vals in every index, removing old
// entries first.
func (ix *Indexer) fileLocked(key string, vals indexValues, obj any) error {
	return fileInto(ix.indices, key, vals, obj)
}

// fileInto files key (holding obj) under vals in the given indexes.
func fileInto(indices map[string]*index, key string, vals indexValues, obj any) error {
	var errs []error
	for i, name := range vals.funcs.names {
		idx := indices[name]
		if vals.errs != nil && vals.errs[i] != nil {
			idx.unfile(key)
			errs = append(errs, fmt.Errorf("index %q of key %q: %w", name, key, vals.errs[i]))
			continue
		}
		idx.file(key, vals.values[i], obj)
	}
	return errors.Join(errs...)
}

// file replaces the values key is filed under with values, holding obj.
func (idx *index) file(key string, values []string, obj any) {
	old, had := idx.byKey[key]
	if had && slices.Equal(old, values) {
		for _, v := range values {
			idx.byValue[v][key] = obj
		}
		return
	}
	idx.unfile(key)
	if len(values) == 0 {
		return
	}
	for _, v := range values {
		set := idx.byValue[v]
		if set == nil {
			set = map[string]any{}
			idx.byValue[v] = set
		}
		set[key] = obj
	}
	idx.byKey[key] = values
}

// unfile removes every entry of key and drops buckets that become empty.
func (idx *index) unfile(key string) {
	old, ok := idx.byKey[key]
	if !ok {
		return
	}
	for _, v := range old {
		if set := idx.byValue[v]; set != nil {
			delete(set, key)
			if len(set) == 0 {
				delete(idx.byValue, v)
			}
		}
	}
	delete(idx.byKey, key)
}

// List returns every stored object in no particular order. The result is
// allocated before the read lock is taken; under it only pointers are copied.
func (ix *Indexer) List() []any {
	out := make([]any, ix.size.Load()+16)
	ix.mu.RLock()
	if n := len(ix.items.objs); n > len(out) {
		out = make([]any, n)
	}
	out = out[:copy(out, ix.items.objs)]
	ix.mu.RUnlock()
	return out
}

// ListKeys returns every stored key in no particular order.
func (ix *Indexer) ListKeys() []string {
	out := make([]string, ix.size.Load()+16)
	ix.mu.RLock()
	if n := len(ix.items.keys); n > len(out) {
		out = make([]string, n)
	}
	out = out[:copy(out, ix.items.keys)]
	ix.mu.RUnlock()
	return out
}

// Len returns the number of stored objects.
func (ix *Indexer) Len() int { return int(ix.size.Load()) }

// Get returns the object stored under obj's key.
func (ix *Indexer) Get(obj any) (item any, exists bool, err error) {
	key, err := ix.keyFunc(obj)
	if err != nil {
		return nil, false, toolscache.KeyError{Obj: obj, Err: err}
	}
	return ix.GetByKey(key)
}

// GetByKey returns the object stored under key. The error is always nil.
func (ix *Indexer) GetByKey(key string) (item any, exists bool, err error) {
	ix.mu.RLock()
	item, exists = ix.items.get(key)
	ix.mu.RUnlock()
	return item, exists, nil
}

// Replace makes list the store's entire content, rebuilds every index and
// records resourceVersion as the store's RV (unconditionally: a Replace is the
// authoritative state at that RV). The new table and indexes are built
// before the write lock is taken, which is then held only to swap them in
// (unless AddIndexers ran meanwhile). It returns a KeyError for every object
// whose key cannot be computed (that object is skipped) and errors of failing
// index functions.
func (ix *Indexer) Replace(list []any, resourceVersion string) error {
	funcs := ix.funcs.Load()
	items, indices, errs := ix.build(list, funcs)

	ix.mu.Lock()
	defer ix.mu.Unlock()
	if cur := ix.funcs.Load(); cur != funcs {
		var idxErrs []error
		indices, idxErrs = buildIndices(items, cur)
		errs = append(errs[:0:0], append(keyErrors(errs), idxErrs...)...)
	}
	ix.items = items
	ix.indices = indices
	ix.size.Store(int64(len(items.objs)))
	ix.rv = resourceVersion
	return errors.Join(errs...)
}

// build makes a table and indexes of list with funcs. It takes no lock.
func (ix *Indexer) build(list []any, funcs *indexFuncs) (table, map[string]*index, []error) {
	items := newTable(len(list))
	var errs []error
	for _, obj := range list {
		key, err := ix.keyFunc(obj)
		if err != nil {
			errs = append(errs, toolscache.KeyError{Obj: obj, Err: err})
			continue
		}
		items.set(key, obj)
	}
	indices, idxErrs := buildIndices(items, funcs)
	return items, indices, append(errs, idxErrs...)
}

func buildIndices(items table, funcs *indexFuncs) (map[string]*index, []error) {
	indices := make(map[string]*index, len(funcs.names))
	for _, name := range funcs.names {
		indices[name] = newIndex()
	}
	var errs []error
	if len(funcs.names) == 0 {
		return indices, nil
	}
	for i, key := range items.keys {
		obj := items.objs[i]
		if err := fileInto(indices, key, funcs.compute(obj), obj); err != nil {
			errs = append(errs, err)
		}
	}
	return indices, errs
}

func keyErrors(errs []error) []error {
	var out []error
	for _, err := range errs {
		var ke toolscache.KeyError
		if errors.As(err, &ke) {
			out = append(out, err)
		}
	}
	return out
}

// Resync is a no-op: the store has nothing to resync. It exists to satisfy
// toolscache.Store.
func (ix *Indexer) Resync() error { return nil }

// LastStoreSyncResourceVersion returns the newest resourceVersion the store
// content is known to reflect: the RV of the last Replace, Bookmark, or
// Add/Update/Delete whose object carried a newer RV. "" before any.
// (client-go returns "" unless its AtomicFIFO gate is on; ours always tracks.)
func (ix *Indexer) LastStoreSyncResourceVersion() string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.rv
}

// Bookmark records rv as the store's RV unless the store already reflects a
// newer one (RVs are compared as integers when both parse; otherwise rv wins).
func (ix *Indexer) Bookmark(rv string) {
	if rv == "" {
		return
	}
	ix.mu.Lock()
	if !rvOlder(rv, ix.rv) {
		ix.rv = rv
	}
	ix.mu.Unlock()
}

func (ix *Indexer) observeRV(obj any) {
	if _, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return
	}
	if m, err := meta.Accessor(obj); err == nil {
		ix.Bookmark(m.GetResourceVersion())
	}
}

// Index returns the stored objects that share at least one value of the
// index indexName with obj. It returns an error if the index does not exist
// or its function fails on obj.
func (ix *Indexer) Index(indexName string, obj any) ([]any, error) {
	funcs := ix.funcs.Load()
	i, ok := slices.BinarySearch(funcs.names, indexName)
	if !ok {
		return nil, errNoIndex(indexName)
	}
	values, err := funcs.fns[i](obj)
	if err != nil {
		return nil, fmt.Errorf("index %q: %w", indexName, err)
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	idx, ok := ix.indices[indexName]
	if !ok {
		return nil, errNoIndex(indexName)
	}
	if len(values) == 1 {
		set := idx.byValue[values[0]]
		out := make([]any, 0, len(set))
		for _, obj := range set {
			out = append(out, obj)
		}
		return out, nil
	}
	seen := map[string]struct{}{}
	var out []any
	for _, v := range values {
		for key, obj := range idx.byValue[v] {
			if _, dup := seen[key]; dup {
				continue
			}
			seen[key] = struct{}{}
			out = append(out, obj)
		}
	}
	return out, nil
}

// IndexKeys returns the sorted keys filed under indexedValue in the index
// indexName, or an error "index with name <name> does not exist".
func (ix *Indexer) IndexKeys(indexName, indexedValue string) ([]string, error) {
	ix.mu.RLock()
	idx, ok := ix.indices[indexName]
	if !ok {
		ix.mu.RUnlock()
		return nil, errNoIndex(indexName)
	}
	set := idx.byValue[indexedValue]
	out := make([]string, 0, len(set))
	for key := range set {
		out = append(out, key)
	}
	ix.mu.RUnlock()
	sort.Strings(out)
	return out, nil
}

// ListIndexFuncValues returns every value present in the index indexName,
// sorted; nil if the index does not exist.
func (ix *Indexer) ListIndexFuncValues(indexName string) []string {
	ix.mu.RLock()
	idx, ok := ix.indices[indexName]
	if !ok {
		ix.mu.RUnlock()
		return nil
	}
	out := make([]string, 0, len(idx.byValue))
	for v := range idx.byValue {
		out = append(out, v)
	}
	ix.mu.RUnlock()
	sort.Strings(out)
	return out
}

// ByIndex returns the objects filed under indexedValue in the index
// indexName, in no particular order, or an error
// "index with name <name> does not exist".
func (ix *Indexer) ByIndex(indexName, indexedValue string) ([]any, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	idx, ok := ix.indices[indexName]
	if !ok {
		return nil, errNoIndex(indexName)
	}
	set := idx.byValue[indexedValue]
	out := make([]any, 0, len(set))
	for _, obj := range set {
		out = append(out, obj)
	}
	return out, nil
}

// GetIndexers returns a copy of the index functions.
func (ix *Indexer) GetIndexers() toolscache.Indexers {
	funcs := ix.funcs.Load()
	out := make(toolscache.Indexers, len(funcs.names))
	for i, name := range funcs.names {
		out[name] = funcs.fns[i]
	}
	return out
}

// AddIndexers adds indexes and files every stored object in them. It may be
// called at any time, also while an informer writes to the store. A name that
// already exists (or appears twice) is an error and nothing is added. Errors
// of index functions on existing objects are returned after the indexes were
// added (those objects are not filed).
func (ix *Indexer) AddIndexers(newIndexers toolscache.Indexers) error {
	if len(newIndexers) == 0 {
		return nil
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	old := ix.funcs.Load()
	var clash []string
	for name := range newIndexers {
		if _, ok := slices.BinarySearch(old.names, name); ok {
			clash = append(clash, name)
		}
	}
	if len(clash) > 0 {
		sort.Strings(clash)
		return fmt.Errorf("indexer conflict: %v", clash)
	}
	all := make(map[string]toolscache.IndexFunc, len(old.names)+len(newIndexers))
	for i, name := range old.names {
		all[name] = old.fns[i]
	}
	added := &indexFuncs{}
	for name, fn := range newIndexers {
		all[name] = fn
		added.names = append(added.names, name)
	}
	sort.Strings(added.names)
	for _, name := range added.names {
		added.fns = append(added.fns, newIndexers[name])
		ix.indices[name] = newIndex()
	}
	next := &indexFuncs{}
	for name := range all {
		next.names = append(next.names, name)
	}
	sort.Strings(next.names)
	for _, name := range next.names {
		next.fns = append(next.fns, all[name])
	}
	// Back-fill under the write lock: a concurrent writer that computed its
	// values with the old snapshot recomputes them (refreshLocked).
	var errs []error
	for i, key := range ix.items.keys {
		obj := ix.items.objs[i]
		if err := ix.fileLocked(key, added.compute(obj), obj); err != nil {
			errs = append(errs, err)
		}
	}
	ix.funcs.Store(next)
	return errors.Join(errs...)
}

func errNoIndex(name string) error {
	return fmt.Errorf("index with name %s does not exist", name)
}
