package informer

import (
	"fmt"
	"slices"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
)

// Selecting before decoding: a read that checks a label selector and index
// values on the stored records and decodes only the objects it returns.

// Candidates names the stored objects a Select considers.
type Candidates struct {
	// Index is the index whose Values name the candidates; "" means every
	// stored object (Values ignored).
	Index string
	// Values are the index values whose objects are candidates.
	Values []string
	// Distinct: no object is filed under two of Values (e.g. the values of
	// one label key), so Select does not de-duplicate.
	Distinct bool
}

// Selection says which candidates a Select keeps.
type Selection struct {
	// Labels, when neither nil nor empty, must match the object's labels.
	Labels labels.Selector
	// Filed are index values the object must be filed under, every one.
	Filed []IndexValue
	// Limit, when positive, stops the Select after that many objects.
	Limit int
	// Into, on a compact store whose codec is a DecoderInto, is called for
	// each record kept, in order, and returns a pointer to a zero value of the
	// stored Go type (e.g. the next element of a typed list's Items): the
	// record is decoded into it and Select returns that pointer, saving an
	// allocation and a copy. Other objects (held decoded, decoded to read their
	// labels, not decodable into that value) come back as without Into, not as
	// an error: compare pointers to tell. Ignored by other stores.
	Into func() any
}

// IndexValue is one value of one index.
type IndexValue struct {
	Index, Value string
}

// Select returns the candidates of from that sel keeps, in List's or
// ByIndex's order, at most sel.Limit if positive: with compact storage each
// a new object the caller owns, else the stored pointers. Index values, and
// labels when the codec is a LabelReader, are checked on the stored record,
// so it decodes only what it returns (and records whose labels it cannot
// read). Objects failing to decode are left out (as in List). Errors: an
// unknown index in from or sel.Filed, an object without metadata when
// sel.Labels is set. It takes no lock; each record is as of some instant of
// the call. (client-go has no equivalent; controller-runtime filters after
// ByIndex/List.)
func (ix *Indexer) Select(from Candidates, sel Selection) ([]any, error) {
	t := ix.table.Load()
	s := &selectState{ix: ix, limit: sel.Limit, funcs: t.funcs}
	if sel.Into != nil {
		if d, ok := ix.codec.(DecoderInto); ok {
			s.into, s.decoder = sel.Into, d
		}
	}
	if sel.Labels != nil && !sel.Labels.Empty() {
		s.labels = sel.Labels
		s.reader, _ = ix.codec.(LabelReader)
		s.query = printQueryOf(sel.Labels)
	}
	for _, f := range sel.Filed {
		i, ok := slices.BinarySearch(t.funcs.names, f.Index)
		if !ok {
			return nil, errNoIndex(f.Index)
		}
		l, ok := t.funcs.lookupOf(i, f.Value)
		if !ok {
			return nil, nil // a namespace-scoped index holds no such value
		}
		s.filed = append(s.filed, filedValue{index: i, at: l})
	}
	switch {
	case from.Index == "" && s.query != nil:
		t.eachCell(s.visitCell)
	case from.Index == "":
		t.each(s.visit)
	default:
		if err := s.fromIndex(t, from); err != nil {
			return nil, err
		}
	}
	yieldAfter(s.visited)
	return s.out, s.err
}

// selectState is one Select's progress; visit is called for each candidate.
type selectState struct {
	ix     *Indexer
	labels labels.Selector // nil: no label check
	reader LabelReader     // nil: labels checked on the decoded object
	// query rejects, from the cell's labelPrint alone, the objects that
	// cannot match labels (nil: labels has no =, == or in requirement).
	query printQuery
	filed []filedValue
	// funcs are the index functions of the table read (indexFuncs.filed).
	funcs *indexFuncs
	limit int
	// into and decoder: Selection.Into and the codec that decodes into it
	// (both nil when Select allocates the objects it returns).
	into    func() any
	decoder DecoderInto
	// view holds the labels of the record being checked, reused from one
	// record to the next.
	view    labelView
	out     []any
	visited int
	err     error
}

// filedValue is an IndexValue with its index's position in the table's funcs
// and where the value is filed.
type filedValue struct {
	index int
	at    indexLookup
}

// fromIndex visits the records filed under from.Values in from.Index.
func (s *selectState) fromIndex(t *segmentTable, from Candidates) error {
	i, idx, ok := t.index(from.Index)
	if !ok {
		return errNoIndex(from.Index)
	}
	var buf [4]indexLookup
	lookups := buf[:0]
	for _, v := range from.Values {
		if l, ok := t.funcs.lookupOf(i, v); ok {
			lookups = append(lookups, l)
		}
	}
	var seen map[*cell]struct{}
	if len(lookups) > 1 && !from.Distinct {
		n := 0
		for _, l := range lookups {
			b, _ := idx.get(indexValue(l.value))
			n += b.Len()
		}
		seen = make(map[*cell]struct{}, n)
	}
	more := true
	for _, l := range lookups {
		b, _ := idx.get(indexValue(l.value))
		b.each(func(e *cell) bool {
			if !inNamespace(e.key, l.namespace) {
				return true
			}
			if s.query != nil && !s.query.mayMatch(labelPrint(e.print.Load())) {
				s.visited++
				return true
			}
			r := e.rec.Load()
			if !s.funcs.filedUnder(e.key, r, i, l.value) {
				return true
			}
			if seen != nil {
				if _, dup := seen[e]; dup {
					return true
				}
				seen[e] = struct{}{}
			}
			more = s.visit(e.key, r)
			return more
		})
		if !more {
			break
		}
	}
	return nil
}

// visitCell is visit for a cell: an object its labelPrint rules out is
// passed over without loading its record.
func (s *selectState) visitCell(e *cell) bool {
	if !s.query.mayMatch(labelPrint(e.print.Load())) {
		s.visited++
		return true
	}
	if r := e.rec.Load(); r != nil {
		return s.visit(e.key, r)
	}
	return true
}

// visit checks key's record r and keeps its object if it is selected; it
// returns false once the Select is done (limit reached, or an error).
func (s *selectState) visit(key string, r *record) bool {
	s.visited++
	for _, f := range s.filed {
		if !f.at.holds(s.funcs, f.index, key, r) {
			return true
		}
	}
	obj, keep := s.keep(key, r)
	if !keep {
		return s.err == nil
	}
	s.out = append(s.out, obj)
	return s.limit <= 0 || len(s.out) < s.limit
}

// keep returns the object of key's record r, as a read returns it, if it
// matches the label selector; it decodes only then, except when the labels
// cannot be read from the encoding.
func (s *selectState) keep(key string, r *record) (any, bool) {
	if s.labels == nil {
		obj, err := s.output(key, r)
		return obj, err == nil
	}
	if r.data == nil {
		if !s.matches(r.obj) {
			return nil, false
		}
		obj, err := s.ix.read(key, r)
		return obj, err == nil
	}
	if s.reader != nil {
		pairs, err := s.reader.AppendLabels(s.view.pairs[:0], r.data)
		if err == nil {
			s.view.pairs = pairs
			if !s.labels.Matches(&s.view) {
				return nil, false
			}
			obj, err := s.output(key, r)
			return obj, err == nil
		}
	}
	obj, err := s.ix.decode(key, r.data)
	if err != nil || !s.matches(obj) {
		return nil, false
	}
	return obj, true
}

// output returns the object of key's record r, which Select keeps: decoded
// into the caller's value when Selection.Into applies, else as a read
// returns it.
func (s *selectState) output(key string, r *record) (any, error) {
	if s.into == nil || r.data == nil {
		return s.ix.read(key, r)
	}
	dst := s.into()
	if err := s.decoder.DecodeInto(r.data, dst); err == nil {
		return dst, nil
	}
	// Not into dst (of another type than the codec's, or a record that does
	// not decode, which read reports): as without Into.
	return s.ix.read(key, r)
}

// matches reports whether obj's labels match the selector; an object without
// metadata is an error (s.err).
func (s *selectState) matches(obj any) bool {
	m, err := apimeta.Accessor(obj)
	if err != nil {
		s.err = fmt.Errorf("cache contained %T, which is not an Object", obj)
		return false
	}
	return s.labels.Matches(labels.Set(m.GetLabels()))
}

// labelView is labels.Labels over key, value pairs (see LabelReader): the
// last pair of a key counts.
type labelView struct {
	pairs []string
}

var _ labels.Labels = (*labelView)(nil)

// Has reports whether the view holds label key.
func (v *labelView) Has(key string) bool {
	_, ok := v.Lookup(key)
	return ok
}

// Get returns the value of label key, "" if absent.
func (v *labelView) Get(key string) string {
	value, _ := v.Lookup(key)
	return value
}

// Lookup returns the value of label key and whether it is present.
func (v *labelView) Lookup(key string) (string, bool) {
	for i := len(v.pairs) - 2; i >= 0; i -= 2 {
		if v.pairs[i] == key {
			return v.pairs[i+1], true
		}
	}
	return "", false
}
