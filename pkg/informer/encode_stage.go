package informer

import (
	"github.com/deltacache/deltacache/pkg/informer/codec"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// The encoding stage of the data path, between the Reflector's transform and
// the DeltaFIFO: reflector.admit (shard filter, transform) hands each
// admitted object to encodeEarly (reflectorOptions.encode), which, with
// compact storage on, returns an *encodedObject the DeltaFIFO queues in the
// object's place (key, resourceVersion, encoding, index values, and the
// decoded object only for a watch event); without compact storage the object
// goes on as it is. Downstream, stored (batch writer) and handlerView
// (informer loop) turn the item back into what the store and the handlers
// get.
//
// Early encoding: with compact storage on, the Reflector encodes each object
// it receives right after the transform (encodeEarly), and the DeltaFIFO
// queues the encoding in the object's place. A listed object is then held
// as bytes from the moment it arrives: an initial list of N objects never
// holds N decoded objects at once (the peak memory of a sync is the store's,
// not the decoded list's), and the encoding and the index functions run on
// the Reflector's goroutine instead of the pop loop's.

// encodedObject is what the DeltaFIFO queues for an object encoded early:
// its key, resourceVersion, encoding and index values (computed from the
// decoded object before it was let go). obj is the decoded object for a
// watch event (handlers receive it, as without compact storage, and as
// controller-runtime's cache hands it out: the StorageCodec's Encode leaves
// it as it was); nil for a listed object, whose handlers receive a
// lazyObject: the listed object itself if it is still in memory when a
// handler is about to receive it (hint, a weak reference: the list is not
// held for the handlers), else a decode of data. data is nil when the codec
// could not encode the object (reported once): obj is then stored decoded.
type encodedObject struct {
	key  string
	rv   string
	data []byte
	vals indexValues
	obj  runtime.Object
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

// encodeEarly returns what the DeltaFIFO queues for obj, received by the
// Reflector: obj itself when compact storage is off or obj has no key, else
// an *encodedObject that keeps obj only if keep (a watch event's object,
// handed to handlers as is).
func (ix *Indexer) encodeEarly(obj runtime.Object, keep bool) any {
	if ix.codec == nil {
		return obj
	}
	key, err := ix.keyFunc(obj)
	if err != nil {
		return obj // the DeltaFIFO reports the key error
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj
	}
	e := &encodedObject{key: key, rv: m.GetResourceVersion(),
		namespace: m.GetNamespace(), uid: m.GetUID(), print: printOfLabels(m.GetLabels())}
	e.vals = ix.table.Load().funcs.computeInto(e.valuesBuf[:], obj)
	e.data = ix.encode(key, obj)
	if keep || e.data == nil {
		e.obj = obj
	} else {
		e.hint = codec.MakeWeakObject(obj)
	}
	return e
}

// stored returns the object and encoding a write of e stores, and e's index
// values for funcs: those computed early, or computed again (from the kept
// object, or by decoding) when AddIndexers changed the index functions since.
func (ix *Indexer) stored(e *encodedObject, funcs *indexFuncs) (obj any, data []byte, vals indexValues) {
	if e.vals.funcs == funcs {
		return e.obj, e.data, e.vals
	}
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

// handlerView returns what handlers receive for an object queued in the
// DeltaFIFO: the decoded object of a watch event, a lazyObject for a listed
// one (with the weak reference to the listed object), and for a tombstone whose last known object is encoded, a tombstone
// holding that object's handler view. Anything else is returned as is.
func (ix *Indexer) handlerView(o any) any {
	switch v := o.(type) {
	case *encodedObject:
		if v.obj != nil {
			return v.obj
		}
		return &lazyObject{ix: ix, key: v.key, data: v.data, hint: v.hint}
	case toolscache.DeletedFinalStateUnknown:
		if e, ok := v.Obj.(*encodedObject); ok {
			v.Obj = ix.handlerView(e)
		}
		return v
	}
	return o
}

// queuedKeyRV returns the key and resourceVersion of an encodedObject; ok is
// false for any other object.
func queuedKeyRV(o any) (key, rv string, ok bool) {
	if e, isEncoded := o.(*encodedObject); isEncoded {
		return e.key, e.rv, true
	}
	return "", "", false
}

// objectRV returns the resourceVersion of obj (a runtime object or an
// encodedObject); "" when it has none.
func objectRV(obj any) string {
	if _, rv, ok := queuedKeyRV(obj); ok {
		return rv
	}
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetResourceVersion()
	}
	return ""
}
