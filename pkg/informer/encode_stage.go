package informer

import (
	"fmt"

	"github.com/deltacache/deltacache/pkg/informer/codec"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// The encoding stage of the data path, between the Reflector's transform and
// the DeltaFIFO: reflector.admit (shard filter, transform) hands each
// admitted object to itemOf (reflectorOptions.item), which with compact
// storage on returns the *queuedItem the DeltaFIFO queues in the object's
// place: its key, resourceVersion, index values and encoding (decoded storage
// queues the object itself, as client-go does).
// Every later stage reads the item's fields: the DeltaFIFO its key and RV,
// the batch writer what it stores (stored, when the index functions changed
// since), the informer loop what handlers receive (compact_store.go
// handlerView), a shard selector its namespace and uid.
//
// Early encoding: with compact storage on, the Reflector encodes each object
// it receives right after the transform, and the DeltaFIFO queues the
// encoding in the object's place. A listed object is then held as bytes from
// the moment it arrives: an initial list of N objects never holds N decoded
// objects at once (the peak memory of a sync is the store's, not the decoded
// list's), and the encoding and the index functions run on the Reflector's
// goroutine instead of the pop loop's.

// queuedItem is what the DeltaFIFO queues for an object received with
// compact storage on: its key, resourceVersion, encoding and index values
// (computed from the decoded object before it was let go). obj is the decoded
// object for a watch event (handlers receive it, as controller-runtime's
// cache hands it out: the StorageCodec's Encode leaves it as it was); nil for
// a listed object, whose handlers receive a lazyObject: the listed object
// itself if it is still in memory when a handler is about to receive it
// (hint, a weak reference: the list is not held for the handlers), else a
// decode of data. data is nil when the codec could not encode the object
// (reported once): obj is then stored decoded.
type queuedItem struct {
	key  string
	rv   string
	data []byte
	vals indexValues
	obj  any
	hint codec.WeakObject
	// namespace and uid are what a shard selector hashes (see
	// ShardSelector.Hash), kept for the DeltaFIFO's filter.
	namespace string
	uid       types.UID
	// print is the object's labelPrint, stored in its cell.
	print labelPrint
	// valuesBuf holds vals.values when the informer has at most as many
	// indexes (one allocation for the item and its values).
	valuesBuf [4][]string
}

// itemOf returns what the DeltaFIFO queues for obj, received by the
// Reflector as how says (listed, watched or deleted): with compact storage
// on, a *queuedItem for a listed or watched object; else obj itself (decoded
// storage, a deleted object, an object without key or metadata, whose key
// error the DeltaFIFO reports). Decoded storage queues the object as
// client-go does: an item per event would cost an allocation and, with the
// label print, half the in-process pipeline's throughput (B3: 533,000 →
// 229,000 updates/s when tried), for no memory saved. The item keeps obj
// unless a listed object was encoded (a watch event's object is handed to
// handlers as is).
func (ix *Indexer) itemOf(obj runtime.Object, how admitHow) any {
	if ix.codec == nil || how == admitDeleted {
		return obj
	}
	key, err := ix.keyFunc(obj)
	if err != nil {
		return obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj
	}
	e := &queuedItem{key: key, rv: m.GetResourceVersion(), obj: obj,
		namespace: m.GetNamespace(), uid: m.GetUID(), print: printOfLabels(m.GetLabels())}
	e.vals = ix.table.Load().funcs.computeInto(e.valuesBuf[:], obj)
	if e.data = ix.encode(key, obj); e.data != nil && how == admitListed {
		e.obj, e.hint = nil, codec.MakeWeakObject(obj)
	}
	return e
}

// encode returns obj's encoding, or nil when compact storage is off or obj
// cannot be encoded (reported to OnCodecError; obj is then kept decoded).
func (ix *Indexer) encode(key string, obj any) []byte {
	if ix.codec == nil {
		return nil
	}
	if _, ok := obj.(runtime.Object); !ok {
		// Tombstones and foreign values written through the Store
		// interface are kept as given.
		return nil
	}
	data, err := ix.codec.Encode(obj)
	if err != nil {
		ix.codecError(key, fmt.Errorf("encode: %w", err))
		return nil
	}
	if data == nil {
		// An empty encoding (a zero object) is still an encoding.
		data = []byte{}
	}
	return data
}

// stored returns the object and encoding a write of e stores, and e's index
// values for funcs when they are not the ones e's were computed with
// (AddIndexers or BuildIndex changed them since; prepare takes e's own
// otherwise): computed again from the kept object, or by decoding.
func (ix *Indexer) stored(e *queuedItem, funcs *indexFuncs) (obj any, data []byte, vals indexValues) {
	if e.obj != nil {
		return e.obj, e.data, funcs.compute(e.obj)
	}
	decoded, err := ix.decode(e.key, e.data)
	if err != nil {
		// Undecodable bytes the codec itself produced (reported): keep them,
		// filed in no index, rather than lose the object.
		return nil, e.data, indexValues{funcs: funcs, values: make([][]string, len(funcs.names))}
	}
	return nil, e.data, funcs.compute(decoded)
}
