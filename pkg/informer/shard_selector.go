package informer

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
)

// ShardField is the object field whose hash places an object in a shard
// (KEP-5866): the paths kube-apiserver accepts in a shardSelector.
type ShardField string

const (
	// ShardByUID hashes object.metadata.uid: uids are random, so equal ranges
	// hold about equal numbers of objects.
	ShardByUID ShardField = "object.metadata.uid"
	// ShardByNamespace hashes object.metadata.namespace ("" for
	// cluster-scoped objects): every object of a namespace is in one shard.
	ShardByNamespace ShardField = "object.metadata.namespace"
)

// HashRange is the closed interval [First, Last] of the 64-bit FNV-1a hash
// space. The whole space is {First: 0, Last: math.MaxUint64}.
type HashRange struct {
	First, Last uint64
}

// FullRange is the whole hash space.
var FullRange = HashRange{First: 0, Last: math.MaxUint64}

// Contains reports whether h is in r.
func (r HashRange) Contains(h uint64) bool { return r.First <= h && h <= r.Last }

// String is r in the server's syntax: inclusive start and exclusive end in
// 0x-prefixed 16-digit lowercase hex; the space ends at 0x10000000000000000.
func (r HashRange) String() string {
	end := "0x10000000000000000"
	if r.Last != math.MaxUint64 {
		end = fmt.Sprintf("0x%016x", r.Last+1)
	}
	return fmt.Sprintf("'0x%016x', '%s'", r.First, end)
}

// ShardSelector selects the objects whose Field hashes into one of Ranges.
// A nil *ShardSelector selects everything; a selector with no ranges selects
// nothing (and is never sent to a server: see Empty).
type ShardSelector struct {
	Field  ShardField
	Ranges []HashRange
}

// ShardHash is the hash the server applies to a shard field's value: 64-bit
// FNV-1a of its bytes (k8s.io/apimachinery/pkg/sharding.HashField).
func ShardHash(value string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(value))
	return h.Sum64()
}

// Empty reports whether s selects nothing (no ranges): a Reflector then lists
// with the selector of one arbitrary hash and keeps nothing.
func (s *ShardSelector) Empty() bool { return s != nil && len(s.Ranges) == 0 }

// String is the shardSelector parameter for s: shardRange(field, 'start',
// 'end') per range, joined by " || "; "" for nil (everything), the range of
// hash 0 alone for an empty selector.
func (s *ShardSelector) String() string {
	if s == nil {
		return ""
	}
	ranges := s.Ranges
	if len(ranges) == 0 {
		ranges = []HashRange{{0, 0}}
	}
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = fmt.Sprintf("shardRange(%s, %s)", s.Field, r)
	}
	return strings.Join(parts, " || ")
}

// Hash returns the shard hash of obj's Field, and false if obj has no
// object metadata (or Field is not a known ShardField).
func (s *ShardSelector) hash(obj any) (uint64, bool) {
	var namespace, uid string
	if e, ok := obj.(*queuedItem); ok {
		// Queued for compact storage: the metadata it was encoded from.
		namespace, uid = e.namespace, string(e.uid)
	} else {
		m, err := meta.Accessor(obj)
		if err != nil {
			return 0, false
		}
		namespace, uid = m.GetNamespace(), string(m.GetUID())
	}
	switch s.Field {
	case ShardByUID:
		return ShardHash(uid), true
	case ShardByNamespace:
		return ShardHash(namespace), true
	default:
		return 0, false
	}
}

// Matches reports whether obj is selected: always for a nil selector, else if
// its Field's hash is in a range (the server's semantics: start inclusive,
// end exclusive); never an object without metadata.
func (s *ShardSelector) Matches(obj any) bool {
	if s == nil {
		return true
	}
	h, ok := s.hash(obj)
	if !ok {
		return false
	}
	return s.ContainsHash(h)
}

// admits is the shard filter, the one both of its call sites use: whether
// obj belongs to the shard s selects (nil: everything). A tombstone is
// judged by its last known object, and admitted when it has none.
//
// It runs twice on an object's way, for two reasons. The Reflector
// (reflector.keep) drops what it receives outside its selector before the
// transform and the encoding, so that a server that ignores the selector
// costs neither, nor the memory of a relist collected whole. The DeltaFIFO
// (deltaFIFO.admitsLocked) applies the selector SetFilter gave it under its
// queue lock, the same lock under which SetFilter evicts what the new
// selector leaves out: an object the Reflector admitted under the old
// selector, still on its way (being transformed or encoded, in a page of a
// list made with the old selector, in a relist collected whole), is refused
// at the queue, so nothing outside the new shard enters once the eviction
// has run.
func (s *ShardSelector) admits(obj any) bool {
	if s == nil {
		return true
	}
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		if t.Obj == nil {
			return true
		}
		obj = t.Obj
	}
	return s.Matches(obj)
}

// ContainsHash reports whether h is in one of s's ranges (true for nil).
func (s *ShardSelector) ContainsHash(h uint64) bool {
	if s == nil {
		return true
	}
	for _, r := range s.Ranges {
		if r.Contains(h) {
			return true
		}
	}
	return false
}

// Equal reports whether s and o select the same field and ranges (in the
// same order).
func (s *ShardSelector) Equal(o *ShardSelector) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.Field == o.Field && slices.Equal(s.Ranges, o.Ranges)
}
