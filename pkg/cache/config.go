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
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Config holds deltacache's own settings, the ones controller-runtime's cache.Options has
// no field for. The zero value is valid and gives controller-runtime's behaviour plus
// deltacache's defaults, as documented per field. Build it with Options passed to NewWith.
type Config struct {
	// LabelIndexes are label keys indexed for every kind as index "label:<key>", with
	// values "<namespace>/<labelvalue>" and "__all_namespaces/<labelvalue>" (cluster-scoped
	// objects only get the latter). A List whose label selector has an "=", "==" or "in"
	// requirement on one of these keys is answered from the index.
	// Zero value: no label indexes; label selectors are evaluated by scanning the
	// namespace index or every object, as controller-runtime does.
	LabelIndexes []string

	// Logger is the logger handed to every informer (through its run context) and used
	// for the cache's own messages.
	// Zero value (which logr.Discard() also is): controller-runtime's log.Log named
	// "deltacache", so ctrl.SetLogger applies to it.
	Logger logr.Logger

	// ListPageSize is the page size of the paginated LIST an informer uses for its
	// initial list and every relist.
	// Zero value: pkg/informer's default (500).
	ListPageSize int64

	// WaitThroughSyncErrors makes a blocking Get, List or GetInformer wait for the
	// informer to sync (or for its context to end) even when the informer reports an
	// error that retrying will not fix, such as Forbidden, Unauthorized or NotFound.
	// Zero value (false): such an error is returned promptly, wrapped so that
	// apierrors.IsForbidden and friends still recognise it. Transient errors (timeouts,
	// connection failures, 5xx, 429) never end the wait early; if the context ends first,
	// the Timeout error also carries the informer's last error.
	// Set it to true for controller-runtime's behaviour (wait until the context ends).
	WaitThroughSyncErrors bool
}

// Option sets a deltacache-only setting; pass Options to NewWith.
type Option func(*Config)

// WithLabelIndexes declares label keys indexed for every kind as index "label:<key>"
// (see Config.LabelIndexes). Keys must be valid label keys ("app",
// "app.kubernetes.io/name"); NewWith's cache constructor returns an error otherwise.
// Repeated keys are indexed once. Several calls accumulate.
func WithLabelIndexes(keys ...string) Option {
	return func(c *Config) {
		c.LabelIndexes = append(c.LabelIndexes, keys...)
	}
}

// WithLogger sets the logger of the cache and its informers (see Config.Logger).
func WithLogger(log logr.Logger) Option {
	return func(c *Config) {
		c.Logger = log
	}
}

// WithListPageSize sets the page size of the informers' paginated LIST requests
// (see Config.ListPageSize). n must not be negative.
func WithListPageSize(n int64) Option {
	return func(c *Config) {
		c.ListPageSize = n
	}
}

// WithWaitThroughSyncErrors restores controller-runtime's behaviour of blocking reads
// until the informer syncs or the context ends, whatever errors the informer reports
// (see Config.WaitThroughSyncErrors).
func WithWaitThroughSyncErrors() Option {
	return func(c *Config) {
		c.WaitThroughSyncErrors = true
	}
}

// complete validates c and returns a copy with label keys de-duplicated (in order).
func (c Config) complete() (Config, error) {
	var errs []string
	keys := make([]string, 0, len(c.LabelIndexes))
	for _, key := range c.LabelIndexes {
		if problems := validation.IsQualifiedName(key); len(problems) > 0 {
			errs = append(errs, fmt.Sprintf("label index key %q is not a valid label key: %s",
				key, strings.Join(problems, "; ")))
			continue
		}
		if !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	if c.ListPageSize < 0 {
		errs = append(errs, fmt.Sprintf("list page size must not be negative, got %d", c.ListPageSize))
	}
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("deltacache: invalid cache config: %s", strings.Join(errs, ", "))
	}
	c.LabelIndexes = keys
	return c, nil
}
