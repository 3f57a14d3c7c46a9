package informer

import (
	"errors"
	"reflect"
	"sync"
	"time"

	"github.com/deltacache/deltacache/pkg/informer/codec"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
)

// Compact storage: the Indexer's side of IndexerOptions.Codec. Writes encode
// (Indexer.encode, in encode_stage.go), reads decode (read); objects the
// codec cannot encode stay decoded and are deep-copied on read, so every read
// returns an object of its own.

// handlerView returns what handlers receive for an object queued in the
// DeltaFIFO: an item's object (a watch event's, or any without compact
// storage), a lazyObject for a listed one held encoded (with the weak
// reference to the listed object), and for a tombstone whose last known
// object is an item, a tombstone holding that item's view. Anything else is
// returned as is.
func (ix *Indexer) handlerView(o any) any {
	switch v := o.(type) {
	case *queuedItem:
		if v.obj != nil {
			return v.obj
		}
		return &lazyObject{ix: ix, key: v.key, data: v.data, hint: v.hint}
	case toolscache.DeletedFinalStateUnknown:
		if e, ok := v.Obj.(*queuedItem); ok {
			v.Obj = ix.handlerView(e)
		}
		return v
	}
	return o
}

// decode decodes data stored under key.
func (ix *Indexer) decode(key string, data []byte) (any, error) {
	obj, err := ix.codec.Decode(data)
	if err != nil {
		err = decodeError{err}
		ix.codecError(key, err)
		return nil, err
	}
	return obj, nil
}

func (ix *Indexer) codecError(key string, err error) {
	if ix.onCodecError != nil {
		ix.onCodecError(key, err)
	}
}

// read returns what a read of key's record r hands out: the stored pointer
// without compact storage; with it, a decoded object, or a deep copy of an
// object kept decoded.
func (ix *Indexer) read(key string, r *record) (any, error) {
	if r.data != nil {
		return ix.decode(key, r.data)
	}
	if ix.codec != nil {
		if ro, ok := r.obj.(runtime.Object); ok {
			return ro.DeepCopyObject(), nil
		}
	}
	return r.obj, nil
}

// handlerObject returns what handlers get for key's record r: the stored
// object, or for an encoded record a lazyObject that is decoded once, when
// a handler is about to receive it (never when no handler does, or when a
// later notification of the key replaces it first).
func (ix *Indexer) handlerObject(key string, r *record) any {
	if r.data == nil {
		return r.obj
	}
	return &lazyObject{ix: ix, key: key, data: r.data}
}

// lazyObject is an encoded object in a handler notification, decoded on
// first use and then shared by every handler that receives it (as client-go
// shares one old object among handlers). hint, set for a listed object,
// refers weakly to the object the list decoded, which the first use takes
// instead of decoding data while the garbage collector has not reclaimed it
// (the object data was encoded from, so the two are equal).
type lazyObject struct {
	ix   *Indexer
	key  string
	data []byte
	hint codec.WeakObject
	once sync.Once
	obj  any
}

// get returns the decoded object; nil if it cannot be decoded (reported to
// the Indexer's OnCodecError).
func (l *lazyObject) get() any {
	l.once.Do(func() {
		if l.hint != (codec.WeakObject{}) { // a listed object's (an old object has none)
			l.obj = l.hint.Value()
		}
		if l.obj == nil {
			l.obj, _ = l.ix.decode(l.key, l.data)
		}
		l.data, l.hint = nil, codec.WeakObject{}
	})
	return l.obj
}

// resolveObject returns o, decoded if it is a lazyObject or a tombstone
// holding one.
func resolveObject(o any) any {
	switch v := o.(type) {
	case *lazyObject:
		return v.get()
	case toolscache.DeletedFinalStateUnknown:
		if l, ok := v.Obj.(*lazyObject); ok {
			v.Obj = l.get()
		}
		return v
	}
	return o
}

// maxCodecErrorKeys bounds the keys an informer remembers having logged a
// codec error for: past it, further keys are counted but not logged.
const maxCodecErrorKeys = 1000

// codecErrors remembers the keys whose codec errors were logged.
type codecErrors struct {
	mu         sync.Mutex
	logged     map[string]struct{}
	suppressed bool
	// lastRelist is when relistForCorrupt last asked for a relist.
	lastRelist time.Time
}

// codecError counts a codec error of key and logs it once per key (the
// Indexer's OnCodecError).
func (s *SharedIndexInformer) codecError(key string, err error) {
	decoding := isDecodeError(err)
	if im := s.obs.Load(); im != nil {
		if decoding {
			im.decodeErrors.Inc()
		} else {
			im.encodeErrors.Inc()
		}
	}
	if decoding {
		s.relistForCorrupt(key)
	}
	c := &s.codecErrs
	c.mu.Lock()
	_, seen := c.logged[key]
	first := !seen && len(c.logged) < maxCodecErrorKeys
	suppress := !seen && !first && !c.suppressed
	if first {
		if c.logged == nil {
			c.logged = map[string]struct{}{}
		}
		c.logged[key] = struct{}{}
	}
	if suppress {
		c.suppressed = true
	}
	c.mu.Unlock()
	if !first && !suppress {
		return
	}
	s.mu.Lock()
	log := s.log
	s.mu.Unlock()
	switch {
	case first && decoding:
		log.Error(err, "Could not decode stored object; it is left out of reads", "key", key)
	case first:
		log.Error(err, "Could not encode object for compact storage; it is kept decoded", "key", key)
	case suppress:
		log.Error(err, "Codec errors of further keys are counted but no longer logged", "key", key,
			"keysLogged", maxCodecErrorKeys)
	}
}

// corruptRelistInterval is the least time between two relists for records
// that did not decode: a codec that cannot decode what it encoded (a bug)
// would otherwise relist at every read.
const corruptRelistInterval = time.Minute

// relistForCorrupt asks the Reflector for a relist, which replaces the record of
// key (and every other) with the server's object encoded anew, at most once
// per corruptRelistInterval; the read that met the record left the object out.
func (s *SharedIndexInformer) relistForCorrupt(key string) {
	c := &s.codecErrs
	c.mu.Lock()
	now := time.Now()
	due := c.lastRelist.IsZero() || now.Sub(c.lastRelist) >= corruptRelistInterval
	if due {
		c.lastRelist = now
	}
	c.mu.Unlock()
	if r := s.getReflector(); due && r != nil {
		r.requestRelist(relistCauseCorrupt, "the stored record of "+key+" did not decode")
	}
}

// decodeError marks errors of Indexer.decode.
type decodeError struct{ err error }

func (e decodeError) Error() string { return "decode: " + e.err.Error() }
func (e decodeError) Unwrap() error { return e.err }

func isDecodeError(err error) bool {
	_, ok := errors.AsType[decodeError](err)
	return ok
}

// GetInto decodes the object stored under key into dst, a pointer to a
// value of the stored Go type (zeroed first), if compact storage holds it
// encoded and the codec is a DecoderInto: an allocation and a copy fewer
// than GetByKey. done is false (dst untouched) otherwise: read with GetByKey.
// exists reports whether key is stored; err a decode error.
func (ix *Indexer) GetInto(key string, dst any) (exists, done bool, err error) {
	into, ok := ix.codec.(DecoderInto)
	if !ok {
		return false, false, nil
	}
	r := ix.table.Load().get(key)
	if r == nil {
		return false, false, nil
	}
	if r.data == nil {
		return true, false, nil
	}
	reflect.ValueOf(dst).Elem().SetZero()
	if err := into.DecodeInto(r.data, dst); err != nil {
		err = decodeError{err}
		ix.codecError(key, err)
		return true, true, err
	}
	return true, true, nil
}
