package informer

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	toolscache "k8s.io/client-go/tools/cache"
)

var _ toolscache.Indexer = (*Indexer)(nil)

// Indexer is a thread-safe key → object store with indexes, client-go
// v0.37's toolscache.Indexer, the store of every SharedIndexInformer (whose
// pop loop is then the only writer: others only read). Without a Codec, reads
// return the pointers added: do not mutate them. Returned slices are fresh.
// Reads take no lock, never block the writer and see every write that
// returned before they started; a List racing with writes may see some,
// never a torn object, and a relist whole or not at all. A failing index
// function leaves the object unfiled in that index (client-go panics).
type Indexer struct {
	keyFunc toolscache.KeyFunc
	// codec, when set, holds objects encoded (see IndexerOptions.Codec).
	codec        StorageCodec
	onCodecError func(key string, err error)
	// scoped names the namespace-scoped indexes (IndexerOptions).
	scoped func(indexName string) bool

	// table is the current content; readers load it, the writer replaces
	// its segments and indexes, or (Replace, AddIndexers, growth) all of it.
	table atomic.Pointer[segmentTable]
	// writeMu serialises writers. Readers never take it.
	writeMu sync.Mutex
	// batch is the one writeBatch, reused by every write (under writeMu;
	// see indexer_write.go).
	batch writeBatch
	// changes notes the keys written while a BuildIndex or RemoveIndex runs
	// (under writeMu; nil otherwise); rebuildMu runs those one at a time.
	// See indexer_build.go.
	changes   *changeLog
	rebuildMu sync.Mutex
}

// indexFuncs is an immutable, name-sorted set of index functions.
type indexFuncs struct {
	names []string
	fns   []toolscache.IndexFunc
	// scoped[i]: names[i] is namespace-scoped (scoped_index.go).
	scoped []bool
	// nsKeys: the Indexer's keys are "<namespace>/<name>"; keyed[i]: index i
	// files each object under its key's namespace, not kept in records
	// (filed_values.go); pos[i] is the position of index i among those a
	// record keeps values of (-1: keyed), storedIndex the index at each such
	// position.
	nsKeys      bool
	keyed       []bool
	pos         []int
	storedIndex []int
}

// NewIndexer returns an empty Indexer that computes keys with keyFunc (for
// example toolscache.DeletionHandlingMetaNamespaceKeyFunc) and maintains the
// given indexes. indexers may be nil. Objects are stored as the pointers
// given (client-go's behaviour); see NewIndexerWithOptions for compact
// storage.
func NewIndexer(keyFunc toolscache.KeyFunc, indexers toolscache.Indexers) *Indexer {
	return NewIndexerWithOptions(keyFunc, indexers, IndexerOptions{})
}

// IndexerOptions configure an Indexer. The zero value stores objects as the
// pointers given, as client-go's store does.
type IndexerOptions struct {
	// Codec turns on compact storage: objects are held encoded and every read
	// decodes a new object the caller owns. An object the codec cannot encode
	// is kept decoded and deep-copied on read.
	Codec StorageCodec
	// OnCodecError gets the key and error of a failed encode (by the writer:
	// the object is kept decoded) or decode (by a reader: Get returns the
	// error, List and ByIndex omit the object); cheap and safe for concurrent
	// use. nil = ignore.
	OnCodecError func(key string, err error)
	// NamespaceScoped says once per index added if its function returns plain
	// values v that reads ask in controller-runtime's layout, "<ns>/<v>" or
	// "__all_namespaces/<v>" (half the entries; see scoped_index.go).
	NamespaceScoped func(indexName string) bool
}

// NewIndexerWithOptions is NewIndexer with options (compact storage).
func NewIndexerWithOptions(keyFunc toolscache.KeyFunc, indexers toolscache.Indexers, opts IndexerOptions) *Indexer {
	ix := &Indexer{keyFunc: keyFunc, codec: opts.Codec, onCodecError: opts.OnCodecError, scoped: opts.NamespaceScoped}
	ix.table.Store(newSegmentTable(newIndexFuncs(indexers, ix.scoped, keysHoldNamespace(keyFunc)), 0, ""))
	return ix
}

// readsCopy reports whether every read returns an object of its own (compact
// storage is on), so a caller that hands objects out needs no deep copy.
func (ix *Indexer) readsCopy() bool { return ix.codec != nil }

// StoredStats describes what an Indexer holds.
type StoredStats struct {
	// Objects is the number of stored objects; Encoded of them are held as
	// bytes (compact storage), the others as decoded objects.
	Objects, Encoded int64
	// EncodedBytes is the total length of the encodings held (the payload
	// only, not the store's structure).
	EncodedBytes int64
}

// StoredStats returns the current StoredStats.
func (ix *Indexer) StoredStats() StoredStats {
	t := ix.table.Load()
	return StoredStats{Objects: t.size.Load(), Encoded: t.encoded.Load(), EncodedBytes: t.encodedBytes.Load()}
}

// newIndexFuncs returns indexers as an indexFuncs, the names scoped reports
// (nil: none) namespace-scoped; with nsKeys (the Indexer's keys are
// "<namespace>/<name>"), an index of toolscache.MetaNamespaceIndexFunc is
// keyed (filed_values.go).
func newIndexFuncs(indexers toolscache.Indexers, scoped func(name string) bool, nsKeys bool) *indexFuncs {
	f := &indexFuncs{names: make([]string, 0, len(indexers)), nsKeys: nsKeys}
	for name := range indexers {
		f.names = append(f.names, name)
	}
	slices.Sort(f.names)
	for i, name := range f.names {
		fn := indexers[name]
		sc := scoped != nil && scoped(name)
		keyed := nsKeys && !sc && isNamespaceIndexFunc(fn)
		f.fns = append(f.fns, fn)
		f.scoped = append(f.scoped, sc)
		f.keyed = append(f.keyed, keyed)
		if keyed {
			f.pos = append(f.pos, -1)
			continue
		}
		f.pos = append(f.pos, len(f.storedIndex))
		f.storedIndex = append(f.storedIndex, i)
	}
	return f
}

// scopedOr is the scoped argument of newIndexFuncs for a set of indexes that
// extends f: f's indexes keep what they are, others are asked of next.
func (f *indexFuncs) scopedOr(next func(name string) bool) func(name string) bool {
	return func(name string) bool {
		if i, ok := slices.BinarySearch(f.names, name); ok {
			return f.scoped[i]
		}
		return next != nil && next(name)
	}
}

// List returns every stored object in no particular order.
func (ix *Indexer) List() []any {
	t := ix.table.Load()
	out := make([]any, 0, t.size.Load()+16)
	t.each(func(key string, r *record) bool {
		if obj, err := ix.read(key, r); err == nil {
			out = append(out, obj)
		}
		return true
	})
	yieldAfter(len(out))
	return out
}

// ListKeys returns every stored key in no particular order.
func (ix *Indexer) ListKeys() []string {
	t := ix.table.Load()
	out := make([]string, 0, t.size.Load()+16)
	t.each(func(key string, _ *record) bool {
		out = append(out, key)
		return true
	})
	yieldAfter(len(out))
	return out
}

// Len returns the number of stored objects.
func (ix *Indexer) Len() int { return int(ix.table.Load().size.Load()) }

// Get returns the object stored under obj's key.
func (ix *Indexer) Get(obj any) (item any, exists bool, err error) {
	key, err := ix.keyFunc(obj)
	if err != nil {
		return nil, false, toolscache.KeyError{Obj: obj, Err: err}
	}
	return ix.GetByKey(key)
}

// GetByKey returns the object stored under key; err is a decode error of
// compact storage (exists true, item nil).
func (ix *Indexer) GetByKey(key string) (item any, exists bool, err error) {
	if r := ix.table.Load().get(key); r != nil {
		obj, err := ix.read(key, r)
		return obj, true, err
	}
	return nil, false, nil
}

// Replace makes list the store's entire content, rebuilds every index,
// publishes it at once and records resourceVersion as the store's RV
// (unconditionally: a Replace is the state at that RV). Errors: a KeyError
// per object without a key (skipped), and those of failing index functions.
func (ix *Indexer) Replace(list []any, resourceVersion string) error {
	funcs := ix.table.Load().funcs
	next, errs := ix.build(list, funcs, resourceVersion)
	ix.writeMu.Lock()
	defer ix.writeMu.Unlock()
	if cur := ix.table.Load(); cur.funcs != funcs {
		next, errs = ix.build(list, cur.funcs, resourceVersion)
	}
	ix.changes.invalidate()
	ix.table.Store(next)
	return errors.Join(errs...)
}

// build makes a table of list with funcs. It takes no lock: the table is
// private until published.
func (ix *Indexer) build(list []any, funcs *indexFuncs, rv string) (*segmentTable, []error) {
	t := newSegmentTable(funcs, len(list), rv)
	var errs []error
	for _, obj := range list {
		key, err := ix.keyFunc(obj)
		if err != nil {
			errs = append(errs, toolscache.KeyError{Obj: obj, Err: err})
			continue
		}
		vals := funcs.compute(obj)
		if err := vals.err(key); err != nil {
			errs = append(errs, err)
		}
		rec, _ := newRecord(obj, ix.encode(key, obj), nil, vals, nil)
		t.fill(key, rec, printOf(obj))
	}
	t.sortSegments()
	t.indexAll()
	return t, errs
}

// indexAll builds t's indexes from its cells (before t is published).
func (t *segmentTable) indexAll() {
	set := &indexSet{byName: make([]trie[indexValue, bucket], len(t.funcs.names))}
	ed := &edit{}
	for j := range t.segments {
		for _, se := range t.segments[j].Load().slots {
			t.funcs.refileCell(ed, set.byName, se.e, nil, se.e.rec.Load())
		}
	}
	ed.trim()
	t.indices.Store(set)
}

// Resync is a no-op (toolscache.Store).
func (ix *Indexer) Resync() error { return nil }

// LastStoreSyncResourceVersion returns the newest resourceVersion the store
// is known to reflect: of the last Replace or Bookmark, or of an
// Add/Update/Delete carrying a newer RV; "" before any. (client-go returns ""
// unless its AtomicFIFO gate is on.)
func (ix *Indexer) LastStoreSyncResourceVersion() string { return *ix.table.Load().rv.Load() }

// Index returns the stored objects that share at least one value of the
// index indexName with obj. It returns an error if the index does not exist
// or its function fails on obj.
func (ix *Indexer) Index(indexName string, obj any) ([]any, error) {
	t := ix.table.Load()
	i, ok := slices.BinarySearch(t.funcs.names, indexName)
	if !ok {
		return nil, errNoIndex(indexName)
	}
	values, err := t.funcs.fns[i](obj)
	if err != nil {
		return nil, fmt.Errorf("index %q: %w", indexName, err)
	}
	idx := t.indices.Load().byName[i]
	if len(values) == 1 {
		return ix.bucketObjects(t, idx, i, indexLookup{value: values[0]}), nil
	}
	seen := map[*cell]struct{}{}
	var out []any
	for _, v := range values {
		b, _ := idx.get(indexValue(v))
		b.each(func(e *cell) bool {
			if _, dup := seen[e]; dup {
				return true
			}
			if r := e.rec.Load(); t.funcs.filedUnder(e.key, r, i, v) {
				seen[e] = struct{}{}
				if obj, err := ix.read(e.key, r); err == nil {
					out = append(out, obj)
				}
			}
			return true
		})
	}
	return out, nil
}

// index returns the position and content of the index named name.
func (t *segmentTable) index(name string) (int, trie[indexValue, bucket], bool) {
	i, ok := slices.BinarySearch(t.funcs.names, name)
	if !ok {
		return 0, trie[indexValue, bucket]{}, false
	}
	return i, t.indices.Load().byName[i], true
}

// bucketObjects returns the objects filed under l in idx (index i of t):
// those of the bucket's cells whose current record is filed there.
func (ix *Indexer) bucketObjects(t *segmentTable, idx trie[indexValue, bucket], i int, l indexLookup) []any {
	b, _ := idx.get(indexValue(l.value))
	out := make([]any, 0, b.Len())
	b.each(func(e *cell) bool {
		if r := e.rec.Load(); l.holds(t.funcs, i, e.key, r) {
			if obj, err := ix.read(e.key, r); err == nil {
				out = append(out, obj)
			}
		}
		return true
	})
	yieldAfter(len(out))
	return out
}

// largeRead is the result size from which a read yields its processor.
const largeRead = 1024

// yieldAfter lets other goroutines run after a read of n ≥ largeRead
// objects. Go's scheduler shares the processors equally among runnable
// goroutines, so on a saturated machine ten goroutines listing in a loop
// would leave the informer's writer a tenth of one; a large read yielding
// once (≈0.1µs when nothing else is runnable, against ≥10µs for the read)
// keeps the writer, and so the store's freshness, from starving.
func yieldAfter(n int) {
	if n >= largeRead {
		runtime.Gosched()
	}
}

// IndexKeys returns the sorted keys filed under indexedValue in the index
// indexName, or an error "index with name <name> does not exist".
func (ix *Indexer) IndexKeys(indexName, indexedValue string) ([]string, error) {
	t := ix.table.Load()
	i, idx, ok := t.index(indexName)
	if !ok {
		return nil, errNoIndex(indexName)
	}
	l, ok := t.funcs.lookupOf(i, indexedValue)
	if !ok {
		return []string{}, nil
	}
	b, _ := idx.get(indexValue(l.value))
	out := make([]string, 0, b.Len())
	b.each(func(e *cell) bool {
		if l.holds(t.funcs, i, e.key, e.rec.Load()) {
			out = append(out, e.key)
		}
		return true
	})
	slices.Sort(out)
	return out, nil
}

// ListIndexFuncValues returns every value present in the index indexName,
// sorted; nil if the index does not exist.
func (ix *Indexer) ListIndexFuncValues(indexName string) []string {
	t := ix.table.Load()
	i, idx, ok := t.index(indexName)
	if !ok {
		return nil
	}
	if t.funcs.scoped[i] {
		return t.scopedValues(i, idx)
	}
	out := make([]string, 0, idx.Len())
	idx.each(func(v indexValue, _ bucket) bool {
		out = append(out, string(v))
		return true
	})
	slices.Sort(out)
	return out
}

// ByIndex returns the objects filed under indexedValue in the index
// indexName, in no particular order, or an error
// "index with name <name> does not exist".
func (ix *Indexer) ByIndex(indexName, indexedValue string) ([]any, error) {
	t := ix.table.Load()
	i, idx, ok := t.index(indexName)
	if !ok {
		return nil, errNoIndex(indexName)
	}
	l, ok := t.funcs.lookupOf(i, indexedValue)
	if !ok {
		return []any{}, nil
	}
	return ix.bucketObjects(t, idx, i, l), nil
}

// GetIndexers returns a copy of the index functions (a namespace-scoped
// index's in controller-runtime's layout: see IndexerOptions).
func (ix *Indexer) GetIndexers() toolscache.Indexers {
	f := ix.table.Load().funcs
	out := indexersOf(f)
	for i, name := range f.names {
		if f.scoped[i] {
			out[name] = scopedFunc(f.fns[i])
		}
	}
	return out
}

// indexersOf returns f as toolscache.Indexers.
func indexersOf(f *indexFuncs) toolscache.Indexers {
	out := make(toolscache.Indexers, len(f.names))
	for i, name := range f.names {
		out[name] = f.fns[i]
	}
	return out
}

// AddIndexers adds indexes and files every stored object in them, at any
// time (readers see them complete from one instant on). A name that exists
// or repeats is an error and nothing is added; errors of index functions on
// stored objects come after the indexes were added (those objects unfiled).
func (ix *Indexer) AddIndexers(newIndexers toolscache.Indexers) error {
	if len(newIndexers) == 0 {
		return nil
	}
	ix.writeMu.Lock()
	defer ix.writeMu.Unlock()
	cur := ix.table.Load()
	var clash []string
	for name := range newIndexers {
		if _, ok := slices.BinarySearch(cur.funcs.names, name); ok {
			clash = append(clash, name)
		}
	}
	if len(clash) > 0 {
		slices.Sort(clash)
		return fmt.Errorf("indexer conflict: %v", clash)
	}
	all := indexersOf(cur.funcs)
	maps.Copy(all, newIndexers)
	funcs := newIndexFuncs(all, cur.funcs.scopedOr(ix.scoped), cur.funcs.nsKeys)
	added := newIndexFuncs(newIndexers, ix.scoped, cur.funcs.nsKeys)
	// Existing objects keep their computed values; only the new functions run.
	next := newSegmentTable(funcs, int(cur.size.Load()), *cur.rv.Load())
	var errs []error
	var copies valueCopies
	cur.eachCell(func(e *cell) bool {
		key, r := e.key, e.rec.Load()
		if r == nil {
			return true
		}
		obj := r.obj
		if r.data != nil {
			var err error
			if obj, err = ix.decode(key, r.data); err != nil {
				// Not filed in the new indexes; kept in the store.
				errs = append(errs, err)
				obj = nil
			}
		}
		newVals := indexValues{funcs: added, values: make([][]string, len(added.names))}
		if obj != nil {
			newVals = added.compute(obj)
			if r.data != nil {
				copies.detach(newVals) // decoded from the record: see valueCopies
			}
		}
		if err := newVals.err(key); err != nil {
			errs = append(errs, err)
		}
		vals := indexValues{funcs: funcs, values: make([][]string, len(funcs.names))}
		for i, name := range funcs.names {
			if funcs.keyed[i] {
				continue // not kept in records
			}
			if j, ok := slices.BinarySearch(added.names, name); ok {
				vals.values[i] = newVals.filed(j)
			} else {
				k, _ := slices.BinarySearch(cur.funcs.names, name)
				vals.values[i] = cur.funcs.storedFiled(r, k)
			}
		}
		rec, _ := newRecord(r.obj, r.data, nil, vals, nil)
		next.fill(key, rec, labelPrint(e.print.Load())) // the labels did not change
		return true
	})
	next.sortSegments()
	next.indexAll()
	ix.changes.invalidate()
	ix.table.Store(next)
	return errors.Join(errs...)
}

func errNoIndex(name string) error {
	return fmt.Errorf("index with name %s does not exist", name)
}
