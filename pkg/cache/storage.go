/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package cache

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/informer/codec"
)

// resolveStorageFor maps Config.StorageFor to GVKs with scheme.
func resolveStorageFor(byObj map[client.Object]StorageMode, scheme *runtime.Scheme) (map[schema.GroupVersionKind]StorageMode, error) {
	out := make(map[schema.GroupVersionKind]StorageMode, len(byObj))
	for obj, mode := range byObj {
		if !validStorageMode(mode) {
			return nil, fmt.Errorf("deltacache: invalid storage mode %q for %T", mode, obj)
		}
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return nil, fmt.Errorf("deltacache: storage mode for %T: %w", obj, err)
		}
		out[gvk] = mode
	}
	return out, nil
}

// storageCodec returns the codec of the informers of key whose scope reads with
// unsafeDisableDeepCopy, or nil to hold their objects decoded (see StorageMode).
func (c *Cache) storageCodec(key entryKey, example runtime.Object, unsafeDisableDeepCopy bool) (informer.StorageCodec, error) {
	mode := c.settings.Storage
	if m, ok := c.storageFor[key.gvk]; ok {
		mode = m
	}
	switch {
	case mode == StorageDecoded:
		return nil, nil
	case mode == StorageAuto && (unsafeDisableDeepCopy || c.settings.MutationDetector):
		// The mutation detector looks for writers of objects shared with the cache;
		// only decoded storage shares them.
		return nil, nil
	}
	inner, err := innerStorageCodec(key, example, mode)
	if err != nil || inner == nil || c.settings.DisableCompression {
		return inner, err
	}
	return codec.NewCompressed(inner, codec.CompressedOptions{})
}

// innerStorageCodec returns the codec that encodes the objects of key (before
// any compression), or nil to hold them decoded.
func innerStorageCodec(key entryKey, example runtime.Object, mode StorageMode) (informer.StorageCodec, error) {
	switch key.shape {
	case shapeUnstructured:
		return codec.NewUnstructuredCBOR(), nil
	case shapeMetadata:
		return codec.NewProtobuf(example)
	}
	if pc, err := codec.NewProtobuf(example); err == nil {
		return pc, nil
	}
	// A typed kind without protobuf (a CRD type): the Plan codec, planned from its
	// Go type, holds its objects in about 0.4 of CBOR's bytes and decodes them at
	// about a deep copy's cost.
	if pc, err := codec.NewPlan(example); err == nil {
		return pc, nil
	}
	if mode == StorageAuto {
		// A type the planner refuses (an interface or unexported field): CBOR would
		// make its objects about half as large but a read several times dearer
		// (docs/benchmarks.md).
		return nil, nil
	}
	return codec.NewCBOR(example)
}

// codecName names a storage codec in a snapshot's identity: its type, and the
// type of the codec it compresses.
func codecName(sc informer.StorageCodec) string {
	if cc, ok := sc.(*codec.Compressed); ok {
		return fmt.Sprintf("%T(%T)", cc, cc.Inner())
	}
	return fmt.Sprintf("%T", sc)
}
