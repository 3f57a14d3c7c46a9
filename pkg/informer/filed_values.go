package informer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
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

// filed returns the values r is filed under in index i of n.
func (r *record) filed(i, n int) []string {
	if r == nil {
		return nil
	}
	return r.vals.of(i, n)
}

// filedUnder reports whether r is filed under value in index i of n.
func (r *record) filedUnder(i, n int, value string) bool {
	return slices.Contains(r.filed(i, n), value)
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
