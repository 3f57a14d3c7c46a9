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
	"sync"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/informer/codec"
	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// liveAPI serves every typed informer from an informertest.Fake per GVK: a tiny API
// server whose Create, Update and Delete reach running informers through their watch,
// with resourceVersions. It ignores namespaces and selectors; use fakeAPI for those.
type liveAPI struct {
	mu    sync.Mutex
	fakes map[schema.GroupVersionKind]*informertest.Fake
}

func (l *liveAPI) fake(gvk schema.GroupVersionKind) *informertest.Fake {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fakes == nil {
		l.fakes = make(map[schema.GroupVersionKind]*informertest.Fake)
	}
	f, ok := l.fakes[gvk]
	if !ok {
		f = informertest.New(newObjectOf(entryKey{gvk: gvk}))
		l.fakes[gvk] = f
	}
	return f
}

func (l *liveAPI) listWatcher(
	key entryKey, _ *apimeta.RESTMapping, _ bool, _ informer.ListWatchOptions, _ *codec.WireCapture,
) (toolscache.ListerWatcher, error) {
	return l.fake(key.gvk), nil
}

// newLiveCache builds a Cache on a new liveAPI (not started).
func newLiveCache(t *testing.T, opts crcache.Options, options ...Option) (*Cache, *liveAPI) {
	t.Helper()
	api := &liveAPI{}
	c := newTestCache(t, newFakeAPI(t), opts, options...)
	c.listWatcher = api.listWatcher
	return c, api
}
