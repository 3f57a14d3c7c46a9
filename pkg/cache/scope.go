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
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// defaultSyncPeriod is controller-runtime's default SyncPeriod.
const defaultSyncPeriod = 10 * time.Hour

// watchScope is one list/watch of an informer entry: the namespace it is restricted to,
// its server-side selectors and the read-side settings that apply to what it stores.
// An entry has one scope, or one per configured namespace (DefaultNamespaces or
// ByObject.Namespaces), exactly where controller-runtime would build one informer cache
// per namespace.
type watchScope struct {
	// key is the namespace key of the configuration this scope comes from; AllNamespaces
	// ("") both for the unrestricted scope and for an AllNamespaces map entry.
	key string
	// namespace the list/watch is restricted to; "" = all namespaces (or cluster scope).
	namespace string

	label                 labels.Selector // server-side; nil = everything
	field                 fields.Selector // server-side; nil = everything
	transform             toolscache.TransformFunc
	unsafeDisableDeepCopy bool
	enableWatchBookmarks  bool
	syncPeriod            time.Duration
}

// scopeSet is the set of scopes of one GVK.
type scopeSet struct {
	scopes []watchScope
	// restricted is true when namespaces were configured: reads in a namespace without
	// its own scope (and without an AllNamespaces scope) are errors, as in
	// controller-runtime's multi-namespace cache.
	restricted bool
}

// scopeResolver applies controller-runtime's option precedence
// (ByObject → DefaultNamespaces[namespace] → Default*) once, in New, and then answers
// per GVK which scopes an informer entry gets.
type scopeResolver struct {
	defaults          crcache.Config
	defaultNamespaces map[string]crcache.Config
	byGVK             map[schema.GroupVersionKind]resolvedByObject
}

type resolvedByObject struct {
	namespaced bool
	// namespaces are the defaulted per-namespace configs; empty = one scope from config.
	namespaces map[string]crcache.Config
	config     crcache.Config
}

// newScopeResolver defaults opts the way controller-runtime's cache.New does
// (pkg/cache/cache.go defaultOpts): ByObject entries are resolved to their GVK and
// scope, ByObject.Namespaces must be nil for cluster-scoped types, a nil
// ByObject.Namespaces of a namespaced type is copied from DefaultNamespaces, every
// nil setting is defaulted from the next level, and an AllNamespaces entry excludes the
// explicitly configured namespaces with "metadata.namespace!=<ns>" field selectors.
func newScopeResolver(opts crcache.Options) (*scopeResolver, error) {
	r := &scopeResolver{
		defaults:          optionDefaultsToConfig(&opts),
		defaultNamespaces: maps.Clone(opts.DefaultNamespaces),
		byGVK:             make(map[schema.GroupVersionKind]resolvedByObject, len(opts.ByObject)),
	}

	for obj, byObject := range opts.ByObject {
		gvk, err := apiutil.GVKForObject(obj, opts.Scheme)
		if err != nil {
			return nil, fmt.Errorf("failed to get GVK for type %T: %w", obj, err)
		}
		isNamespaced, err := apiutil.IsGVKNamespaced(gvk, opts.Mapper)
		if err != nil {
			return nil, fmt.Errorf("failed to determine if %T is namespaced: %w", obj, err)
		}
		if !isNamespaced && byObject.Namespaces != nil {
			return nil, fmt.Errorf("type %T is not namespaced, but its ByObject.Namespaces setting is not nil", obj)
		}
		if _, dup := r.byGVK[gvk]; dup {
			return nil, fmt.Errorf("ByObject has more than one entry for %s", gvk)
		}

		namespaces := maps.Clone(byObject.Namespaces)
		if isNamespaced && byObject.Namespaces == nil {
			namespaces = maps.Clone(opts.DefaultNamespaces)
		}
		typeConfig := byObjectToConfig(byObject)
		for namespace, config := range namespaces {
			// The type-level config first, undefaulted, so that it can fall through to
			// DefaultNamespaces[namespace] and then to the global defaults.
			config = defaultConfig(config, typeConfig)
			if nsDefaults, ok := opts.DefaultNamespaces[namespace]; ok {
				config = defaultConfig(config, nsDefaults)
			}
			config = defaultConfig(config, r.defaults)
			namespaces[namespace] = withAllNamespacesExclusions(namespace, config, namespaces)
		}

		r.byGVK[gvk] = resolvedByObject{
			namespaced: isNamespaced,
			namespaces: namespaces,
			config:     defaultConfig(typeConfig, r.defaults),
		}
	}

	for namespace, config := range r.defaultNamespaces {
		config = defaultConfig(config, r.defaults)
		r.defaultNamespaces[namespace] = withAllNamespacesExclusions(namespace, config, opts.DefaultNamespaces)
	}
	return r, nil
}

// scopesFor returns the scopes of an informer entry for gvk.
func (r *scopeResolver) scopesFor(gvk schema.GroupVersionKind, namespaced bool) scopeSet {
	if byObject, ok := r.byGVK[gvk]; ok {
		if namespaced && len(byObject.namespaces) > 0 {
			return scopeSet{scopes: scopesFromNamespaces(byObject.namespaces), restricted: true}
		}
		return scopeSet{scopes: []watchScope{scopeFromConfig(metav1.NamespaceAll, byObject.config)}}
	}
	if namespaced && len(r.defaultNamespaces) > 0 {
		return scopeSet{scopes: scopesFromNamespaces(r.defaultNamespaces), restricted: true}
	}
	return scopeSet{scopes: []watchScope{scopeFromConfig(metav1.NamespaceAll, r.defaults)}}
}

// scopesFromNamespaces returns one scope per namespace key, sorted by key so that
// multi-namespace Lists have a stable order.
func scopesFromNamespaces(namespaces map[string]crcache.Config) []watchScope {
	keys := slices.Sorted(maps.Keys(namespaces))
	scopes := make([]watchScope, 0, len(keys))
	for _, key := range keys {
		scopes = append(scopes, scopeFromConfig(key, namespaces[key]))
	}
	return scopes
}

// scopeFromConfig turns a fully defaulted config into a scope. The list/watch is
// restricted to key, or, for the AllNamespaces key, to the namespace an exact
// "metadata.namespace=" field selector names (as controller-runtime's
// restrictNamespaceBySelector does).
func scopeFromConfig(key string, config crcache.Config) watchScope {
	namespace := key
	if namespace == metav1.NamespaceAll && config.FieldSelector != nil && !config.FieldSelector.Empty() {
		if value, found := config.FieldSelector.RequiresExactMatch("metadata.namespace"); found {
			namespace = value
		}
	}
	return watchScope{
		key:                   key,
		namespace:             namespace,
		label:                 config.LabelSelector,
		field:                 config.FieldSelector,
		transform:             config.Transform,
		unsafeDisableDeepCopy: ptr.Deref(config.UnsafeDisableDeepCopy, false),
		enableWatchBookmarks:  ptr.Deref(config.EnableWatchBookmarks, true),
		syncPeriod:            ptr.Deref(config.SyncPeriod, defaultSyncPeriod),
	}
}

// withAllNamespacesExclusions adds "metadata.namespace!=<ns>" for every other configured
// namespace to the config of the AllNamespaces key, so that no object is cached twice.
func withAllNamespacesExclusions(key string, config crcache.Config, all map[string]crcache.Config) crcache.Config {
	if key != metav1.NamespaceAll {
		return config
	}
	var selectors []fields.Selector
	for _, namespace := range slices.Sorted(maps.Keys(all)) {
		if namespace != metav1.NamespaceAll {
			selectors = append(selectors, fields.OneTermNotEqualSelector("metadata.namespace", namespace))
		}
	}
	if config.FieldSelector != nil {
		selectors = append(selectors, config.FieldSelector)
	}
	config.FieldSelector = fields.AndSelectors(selectors...)
	return config
}

func optionDefaultsToConfig(opts *crcache.Options) crcache.Config {
	return crcache.Config{
		LabelSelector:         opts.DefaultLabelSelector,
		FieldSelector:         opts.DefaultFieldSelector,
		Transform:             opts.DefaultTransform,
		UnsafeDisableDeepCopy: opts.DefaultUnsafeDisableDeepCopy,
		EnableWatchBookmarks:  opts.DefaultEnableWatchBookmarks,
		SyncPeriod:            opts.SyncPeriod,
	}
}

func byObjectToConfig(byObject crcache.ByObject) crcache.Config {
	return crcache.Config{
		LabelSelector:         byObject.Label,
		FieldSelector:         byObject.Field,
		Transform:             byObject.Transform,
		UnsafeDisableDeepCopy: byObject.UnsafeDisableDeepCopy,
		EnableWatchBookmarks:  byObject.EnableWatchBookmarks,
		SyncPeriod:            byObject.SyncPeriod,
	}
}

// defaultConfig fills every nil setting of toDefault from defaultFrom.
func defaultConfig(toDefault, defaultFrom crcache.Config) crcache.Config {
	if toDefault.LabelSelector == nil {
		toDefault.LabelSelector = defaultFrom.LabelSelector
	}
	if toDefault.FieldSelector == nil {
		toDefault.FieldSelector = defaultFrom.FieldSelector
	}
	if toDefault.Transform == nil {
		toDefault.Transform = defaultFrom.Transform
	}
	if toDefault.UnsafeDisableDeepCopy == nil {
		toDefault.UnsafeDisableDeepCopy = defaultFrom.UnsafeDisableDeepCopy
	}
	if toDefault.EnableWatchBookmarks == nil {
		toDefault.EnableWatchBookmarks = defaultFrom.EnableWatchBookmarks
	}
	if toDefault.SyncPeriod == nil {
		toDefault.SyncPeriod = defaultFrom.SyncPeriod
	}
	return toDefault
}
