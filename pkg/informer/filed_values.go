package informer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
)

// filedValues is what a record is filed under in each index (aligned with
// indexFuncs.names), in one slice: a store of pods with a namespace, a
// label and a field index keeps one slice of five strings per pod instead
// of a slice of three slices (24 B of header and a backing array each).
//
// Two forms, told apart by the length, n being the number of indexes:
//   - n strings: each index has exactly one value, the i-th (the common
//     case: a namespace, one label value);
//   - otherwise the values of every index in order, then (when that would
//     make n strings) one "" of padding, then a shape: the number of values
//     of each index as uvarints, in one string shared by every record of
//     that shape (shapeOf).
//
// nil: filed in no index. Immutable once built; filed returns subslices of
// it, which callers must not modify.
type filedValues []string

// filedSize returns the length of the filedValues of n indexes whose values
// valuesOf gives: 0 when no index has a value, n when each has exactly one
// (the single form).
func filedSize(n int, valuesOf func(i int) []string) int {
	total := 0
	single := true
	for i := range n {
		c := len(valuesOf(i))
		total += c
		single = single && c == 1
	}
	switch {
	case total == 0:
		return 0
	case single:
		return n
	case total+1 == n:
		return n + 1 // the padding: n strings would read as the single form
	}
	return total + 1
}

// fillFiled writes the filedValues of n indexes whose values valuesOf gives
// into out, of filedSize's length (not 0). canon, when not nil, returns the
// string to keep for value s of index i: s itself or a string equal to it
// (the Indexer passes the key of the index's bucket, so that records share
// one string per value instead of each keeping the one its object came with).
func fillFiled(out filedValues, n int, valuesOf func(i int) []string, canon func(i int, s string) string) {
	keep := func(i int, s string) string {
		if canon == nil {
			return s
		}
		return canon(i, s)
	}
	if len(out) == n {
		for i := range n {
			out[i] = keep(i, valuesOf(i)[0])
		}
		return
	}
	at := 0
	var buf [64]byte
	shape := buf[:0]
	for i := range n {
		v := valuesOf(i)
		for _, s := range v {
			out[at] = keep(i, s)
			at++
		}
		shape = binary.AppendUvarint(shape, uint64(len(v)))
	}
	out[len(out)-1] = shapeOf(shape)
}

// of returns the values of index i, of n indexes.
func (f filedValues) of(i, n int) []string {
	switch {
	case f == nil:
		return nil
	case len(f) == n:
		return f[i : i+1 : i+1]
	}
	shape := f[len(f)-1]
	at, pos := 0, 0
	for j := range n {
		c, next := uvarintIn(shape, pos)
		if next < 0 {
			return nil // not a shape fillFiled made
		}
		pos = next
		if j == i {
			if c == 0 {
				return nil
			}
			return f[at : at+int(c) : at+int(c)]
		}
		at += int(c)
	}
	return nil // i ≥ n
}

// uvarintIn decodes the uvarint of s at pos (as binary.Uvarint, on a string)
// and returns it and the position after it; -1 when s ends within it or it
// overflows 64 bits.
func uvarintIn(s string, pos int) (uint64, int) {
	var x uint64
	for shift := uint(0); pos < len(s) && shift < 64; shift += 7 {
		b := s[pos]
		pos++
		if b < 0x80 {
			return x | uint64(b)<<shift, pos
		}
		x |= uint64(b&0x7f) << shift
	}
	return 0, -1
}

// shapes holds one string per shape met, so that records of a shape share
// it; shapesMu guards it (written once per new shape, read on the writes of
// records of several values in one index).
var (
	shapesMu sync.RWMutex
	shapes   = map[string]string{}
)

// shapeOf returns the shared string of the bytes b.
func shapeOf(b []byte) string {
	shapesMu.RLock()
	s, ok := shapes[string(b)] // no copy of b for the lookup
	shapesMu.RUnlock()
	if ok {
		return s
	}
	shapesMu.Lock()
	defer shapesMu.Unlock()
	if s, ok := shapes[string(b)]; ok {
		return s
	}
	s = string(b)
	shapes[s] = s
	return s
}

// Keyed indexes. An index whose function is toolscache.MetaNamespaceIndexFunc,
// in an Indexer whose keys are "<namespace>/<name>" (MetaNamespaceKeyFunc or
// DeletionHandlingMetaNamespaceKeyFunc), files each object under the
// namespace its key starts with: the Indexer neither runs the function nor
// keeps the value in the record (16 B per object less: every informer of
// pkg/cache has such a namespace index), and derives it from the key where a
// record's values are read. A key's namespace never changes, so an update
// never refiles the object in a keyed index.

// namespaceIndexFunc and the key functions are compared by code pointer.
var (
	namespaceIndexFunc = reflect.ValueOf(toolscache.MetaNamespaceIndexFunc).Pointer()
	namespaceKeyFuncs  = [...]uintptr{
		reflect.ValueOf(toolscache.MetaNamespaceKeyFunc).Pointer(),
		reflect.ValueOf(toolscache.DeletionHandlingMetaNamespaceKeyFunc).Pointer(),
	}
)

// keysHoldNamespace reports whether keyFunc makes keys "<namespace>/<name>"
// (and "<name>" for cluster-scoped objects).
func keysHoldNamespace(keyFunc toolscache.KeyFunc) bool {
	if keyFunc == nil {
		return false
	}
	p := reflect.ValueOf(keyFunc).Pointer()
	return p == namespaceKeyFuncs[0] || p == namespaceKeyFuncs[1]
}

// isNamespaceIndexFunc reports whether fn is toolscache.MetaNamespaceIndexFunc.
func isNamespaceIndexFunc(fn toolscache.IndexFunc) bool {
	return fn != nil && reflect.ValueOf(fn).Pointer() == namespaceIndexFunc
}

// keyNamespace returns the namespace of a "<namespace>/<name>" key: what
// precedes its "/", or "" for a cluster-scoped object's "<name>".
func keyNamespace(key string) string {
	if ns, _, found := strings.Cut(key, "/"); found {
		return ns
	}
	return ""
}

// filedUnder reports whether the record r of key is filed under value in
// index i of f.
func (f *indexFuncs) filedUnder(key string, r *record, i int, value string) bool {
	if r == nil {
		return false
	}
	if f.keyed[i] {
		return keyNamespace(key) == value
	}
	return slices.Contains(r.vals.of(f.pos[i], len(f.storedIndex)), value)
}

// storedFiled returns the values r keeps for index i of f, which is not
// keyed (nil: r is nil).
func (f *indexFuncs) storedFiled(r *record, i int) []string {
	if r == nil {
		return nil
	}
	return r.vals.of(f.pos[i], len(f.storedIndex))
}

// refileCell moves the cell e, in every index of byName (aligned with f),
// from the values of its record old to those of rec (either nil: e is
// added or removed).
func (f *indexFuncs) refileCell(ed *edit, byName []trie[indexValue, bucket], e *cell, old, rec *record) {
	for i := range byName {
		if !f.keyed[i] {
			byName[i] = refileIndex(ed, byName[i], e, f.storedFiled(old, i), f.storedFiled(rec, i))
			continue
		}
		if (old == nil) == (rec == nil) {
			continue // updated (or neither): the key's namespace is the same
		}
		// The bucket of a namespace new to the index keeps this key's
		// prefix as its value: a string of the key, alive as long as the
		// bucket (one per namespace).
		ns := [1]string{keyNamespace(e.key)}
		if old == nil {
			byName[i] = refileIndex(ed, byName[i], e, nil, ns[:])
		} else {
			byName[i] = refileIndex(ed, byName[i], e, ns[:], nil)
		}
	}
}

// indexValues are the values of one object for every index of a funcs set,
// aligned with indexFuncs.names. errs[i] is set if that index function failed.
type indexValues struct {
	funcs  *indexFuncs
	values [][]string
	errs   []error
}

// compute runs every index function of f on obj. It takes no lock.
func (f *indexFuncs) compute(obj any) indexValues { return f.computeInto(nil, obj) }

// computeInto is compute keeping the values in buf when it has room for one
// slice per index (the encoding stage's item carries such a buffer: one
// allocation less per object).
func (f *indexFuncs) computeInto(buf [][]string, obj any) indexValues {
	values := buf[:0]
	if cap(values) < len(f.names) {
		values = make([][]string, len(f.names))
	} else {
		values = values[:len(f.names)]
		clear(values)
	}
	v := indexValues{funcs: f, values: values}
	for i, fn := range f.fns {
		if f.keyed[i] {
			continue // derived from the key (see keyNamespace)
		}
		vals, err := fn(obj)
		if err != nil {
			if v.errs == nil {
				v.errs = make([]error, len(f.names))
			}
			v.errs[i] = err
			continue
		}
		if len(vals) > 0 {
			v.values[i] = vals
		}
	}
	return v
}

// filed returns the values to file the object under in index i: none if the
// index function failed.
func (v indexValues) filed(i int) []string {
	if (v.errs != nil && v.errs[i] != nil) || len(v.values[i]) == 0 {
		return nil
	}
	return v.values[i]
}

// storedFiled is filed of the j-th index a record keeps values of
// (indexFuncs.storedIndex: keyed indexes left out).
func (v indexValues) storedFiled(j int) []string { return v.filed(v.funcs.storedIndex[j]) }

// err joins the index function errors of key's values, naming each index.
func (v indexValues) err(key string) error {
	if v.errs == nil {
		return nil
	}
	var errs []error
	for i, err := range v.errs {
		if err != nil {
			errs = append(errs, fmt.Errorf("index %q of key %q: %w", v.funcs.names[i], key, err))
		}
	}
	return errors.Join(errs...)
}
