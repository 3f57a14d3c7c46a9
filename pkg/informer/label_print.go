package informer

import (
	"hash/maphash"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// A label print is a small Bloom filter of an object's labels, kept in the
// object's cell (8 bytes per object) so that a List selecting by label can
// pass over most objects without loading their record or their stored bytes:
// each label key=value pair sets two of 63 bits; bit 63 marks a print that
// was computed (a cell holding 0 has no print, and every check passes it).
// A print never rejects an object whose labels match: it only says "cannot
// have key=value". With five labels (ten bits set), a query for one pair
// passes about 2–3% of the objects that lack it.
type labelPrint uint64

// printComputed marks a computed print.
const printComputed labelPrint = 1 << 63

// printOfLabels returns the print of a label map.
func printOfLabels(m map[string]string) labelPrint {
	p := printComputed
	for k, v := range m {
		p |= pairBits(k, v)
	}
	return p
}

// printOf returns the print of obj's labels; 0 (no print) for an object
// without metadata.
func printOf(obj any) labelPrint {
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0
	}
	return printOfLabels(m.GetLabels())
}

// printSeed seeds the pair hashes: prints live in one process only (they are
// recomputed whenever an object is stored), so a per-process seed serves.
var printSeed = maphash.MakeSeed()

// pairBits returns the two bits of the pair key=value: the key's and the
// value's hashes (hash/maphash, hardware-assisted) mixed, two 6-bit fields of
// the mix taken modulo 63.
func pairBits(key, value string) labelPrint {
	h := maphash.String(printSeed, key) ^ maphash.String(printSeed, value)*0x9E3779B97F4A7C15
	h ^= h >> 29
	return 1<<(h%63) | 1<<((h>>32)%63)
}

// printQuery is what a label selector asks of a print: for each requirement
// that needs a pair (=, ==, in), the bits of each value it accepts; an object
// whose print lacks all alternatives of one requirement cannot match.
type printQuery [][]labelPrint

// printQueryOf returns the print query of sel; nil when no requirement needs
// a pair (only !=, notin, exists, !key, or sel nil/empty).
func printQueryOf(sel labels.Selector) printQuery {
	if sel == nil {
		return nil
	}
	reqs, selectable := sel.Requirements()
	if !selectable {
		return nil
	}
	var q printQuery
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
		default:
			continue
		}
		values := r.ValuesUnsorted()
		alts := make([]labelPrint, len(values))
		for i, v := range values {
			alts[i] = pairBits(r.Key(), v)
		}
		q = append(q, alts)
	}
	return q
}

// mayMatch reports whether an object with print p may match the query's
// selector: p is absent (0), or for every requirement p has all the bits of
// one of its values.
func (q printQuery) mayMatch(p labelPrint) bool {
	if p == 0 {
		return true
	}
	for _, alts := range q {
		found := false
		for _, b := range alts {
			if p&b == b {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
