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
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/deltacache/deltacache/pkg/informer"
)

// Snapshots (WithSnapshots): the informer option of one scope, informer.Snapshot, with
// the file name, the identity and the metadata diff's LIST and Get.

// snapshotCodecVersion names the encodings of the storage codecs in a snapshot's
// identity; bump it when a codec's encoding changes, so that snapshots written by a
// program with the same WithSnapshotVersion but the old encoding are discarded.
const snapshotCodecVersion = "1"

var secretGK = schema.GroupKind{Kind: "Secret"}

// snapshot returns the Snapshot option of the informer of one scope of key; the zero
// value (off) without WithSnapshots, and for Secrets without WithSnapshotSecrets.
// codec is the informer's storage codec (nil: the informer logs that snapshots are off
// for it).
func (c *Cache) snapshot(
	key entryKey, mapping *meta.RESTMapping, namespaced bool, scope watchScope, lwOpts informer.ListWatchOptions,
	codec informer.StorageCodec,
) (informer.Snapshot, error) {
	if c.settings.SnapshotDir == "" || (key.gvk.GroupKind() == secretGK && !c.settings.SnapshotSecrets) {
		return informer.Snapshot{}, nil
	}
	get, err := c.objectGetter(key, mapping, namespaced)
	if err != nil {
		return informer.Snapshot{}, err
	}
	return informer.Snapshot{
		Dir:          c.settings.SnapshotDir,
		Name:         snapshotName(key, scope),
		Identity:     c.snapshotIdentity(key, lwOpts, codec),
		Version:      c.settings.SnapshotVersion,
		Interval:     c.settings.SnapshotInterval,
		ListMetadata: c.metadataLister(mapping, namespaced, lwOpts),
		Get:          get,
	}, nil
}

// snapshotName is the file of one scope of key: group, version, kind, shape and
// namespace ("all" for every namespace), e.g. "apps_v1_Deployment_typed_all";
// informer.Snapshot replaces characters outside [A-Za-z0-9._-].
func snapshotName(key entryKey, scope watchScope) string {
	ns := scope.namespace
	if ns == "" {
		ns = "all"
	}
	group := key.gvk.Group
	if group == "" {
		group = "core"
	}
	return strings.Join([]string{group, key.gvk.Version, key.gvk.Kind, key.shape.String(), ns}, "_")
}

// snapshotIdentity is what must be equal for a snapshot to be resumed: the API
// server's address (resourceVersions of another cluster mean nothing here), the kind
// and shape, the scope's namespace and selectors, the storage codec and its version,
// and the settings that change the stored form of an object. The shard selector is
// not part of it: it moves while the informer runs, and the informer itself records
// in each snapshot the selector its records are complete for and resumes only a
// snapshot of its own selector (informer.Snapshot).
func (c *Cache) snapshotIdentity(key entryKey, lwOpts informer.ListWatchOptions, codec informer.StorageCodec) string {
	return fmt.Sprintf("server=%q gvk=%s shape=%s namespace=%q labels=%q fields=%q codec=%s/%s "+
		"keepManagedFields=%t typeMeta=%t",
		c.config.Host, key.gvk, key.shape, lwOpts.Namespace, lwOpts.LabelSelector, lwOpts.FieldSelector,
		codecName(codec), snapshotCodecVersion, c.settings.KeepManagedFields, c.settings.TypeMetaOnHandlerObjects)
}

// objectGetter returns the Get of the metadata diff: one object of key's shape,
// through a client like its ListerWatcher's (newListWatch), without a wire
// capture: the diff's Gets run side by side and are admitted in another order
// than they are decoded, so the codec marshals what they fetch.
func (c *Cache) objectGetter(
	key entryKey, mapping *meta.RESTMapping, namespaced bool,
) (func(ctx context.Context, namespace, name string, opts metav1.GetOptions) (runtime.Object, error), error) {
	switch key.shape {
	case shapeUnstructured:
		res := c.dynamicClient.Resource(mapping.Resource)
		return func(ctx context.Context, namespace, name string, opts metav1.GetOptions) (runtime.Object, error) {
			if namespaced {
				return res.Namespace(namespace).Get(ctx, name, opts)
			}
			return res.Get(ctx, name, opts)
		}, nil
	case shapeMetadata:
		res := c.metadataClient.Resource(mapping.Resource)
		return func(ctx context.Context, namespace, name string, opts metav1.GetOptions) (runtime.Object, error) {
			get := res.Get
			if namespaced {
				get = res.Namespace(namespace).Get
			}
			obj, err := get(ctx, name, opts)
			if err != nil {
				return nil, err
			}
			obj.SetGroupVersionKind(key.gvk) // as the metadata ListerWatcher sets it
			return obj, nil
		}, nil
	default:
		client, err := apiutil.RESTClientForGVK(key.gvk, false, false, c.config, c.codecs, c.httpClient)
		if err != nil {
			return nil, fmt.Errorf("building REST client for %s: %w", key.gvk, err)
		}
		return func(ctx context.Context, namespace, name string, opts metav1.GetOptions) (runtime.Object, error) {
			return client.Get().
				Resource(mapping.Resource.Resource).
				NamespaceIfScoped(namespace, namespaced).
				Name(name).
				VersionedParams(&opts, metav1.ParameterCodec).
				Do(ctx).
				Get()
		}, nil
	}
}
