package codec

import (
	"reflect"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The decoder's Quantities come from a cache of the strings it parsed last:
// the requests and limits of the objects of a kind repeat ("100m", "128Mi"),
// and resource.ParseQuantity was about 7 % of a server-shaped Pod's decode.
//
// The cache is direct-mapped, quantityCacheSize slots by a hash of the
// string, lock-free: an entry never changes once stored, and a miss replaces
// the slot's entry. An entry keeps its own copy of the string (the decoder's
// bytes are the caller's), so every Quantity decoded from it shares that copy
// as resource.ParseQuantity's result shares its input; strings are immutable.
// Only a Quantity held as an int64 amount is kept: one held as an inf.Dec
// keeps a pointer its methods may write through, which two objects must not
// share. A decoded Quantity equals resource.ParseQuantity's (DeepEqual).
const (
	quantityCacheSize = 256
	// maxCachedQuantity is the longest string kept: longer ones are rare
	// and would make the cache hold more.
	maxCachedQuantity = 32
)

type quantityEntry struct {
	s string
	q resource.Quantity
}

var quantityCache [quantityCacheSize]atomic.Pointer[quantityEntry]

// quantityDecField is the index of resource.Quantity's inf.Dec amount.
var quantityDecField = func() int {
	f, ok := reflect.TypeFor[resource.Quantity]().FieldByName("d")
	if !ok {
		panic("codec: resource.Quantity has no field d")
	}
	return f.Index[0]
}()

// parseQuantity returns resource.ParseQuantity of b, from the cache when it
// holds b. The Quantity's string may alias b on a miss that is not cached
// (as unmarshalQuantity's callers allow).
func parseQuantity(b []byte) (resource.Quantity, error) {
	slot := &quantityCache[quantityHash(b)&(quantityCacheSize-1)]
	if e := slot.Load(); e != nil && e.s == string(b) {
		return e.q, nil
	}
	q, err := resource.ParseQuantity(aliasString(b))
	if err != nil || len(b) > maxCachedQuantity || holdsDec(&q) {
		return q, err
	}
	e := &quantityEntry{s: string(b)}
	if e.q, err = resource.ParseQuantity(e.s); err != nil {
		return q, nil // the same string parsed a moment ago
	}
	slot.Store(e)
	return e.q, nil
}

// holdsDec reports whether q keeps its amount as an inf.Dec.
func holdsDec(q *resource.Quantity) bool {
	return !reflect.ValueOf(q).Elem().Field(quantityDecField).Field(0).IsNil()
}

// quantityHash is FNV-1a of b.
func quantityHash(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	return h
}
