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
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
)

// multiNamespaceInformer is the informer GetInformer returns for a kind cached in
// several namespaces (DefaultNamespaces or ByObject.Namespaces with more than one
// entry): it fans every call out to the informer of each namespace, like
// controller-runtime's multiNamespaceInformer. A handler added to it receives the
// events of all namespaces; its registration has synced when every namespace's has.
type multiNamespaceInformer struct {
	// names are the namespace keys, parallel to informers ("" = AllNamespaces).
	names     []string
	informers []crcache.Informer
	synced    doneAll
}

var _ crcache.Informer = (*multiNamespaceInformer)(nil)

func newMultiNamespaceInformer(scopes []*scopedInformer) *multiNamespaceInformer {
	m := &multiNamespaceInformer{}
	checkers := make([]toolscache.DoneChecker, 0, len(scopes))
	for _, s := range scopes {
		m.names = append(m.names, s.scope.key)
		m.informers = append(m.informers, s.informer)
		checkers = append(checkers, s.informer.HasSyncedChecker())
	}
	m.synced = doneAll{names: m.names, checkers: checkers}
	return m
}

// AddEventHandler adds handler to the informer of every namespace.
func (m *multiNamespaceInformer) AddEventHandler(
	handler toolscache.ResourceEventHandler,
) (toolscache.ResourceEventHandlerRegistration, error) {
	return m.register(func(i crcache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandler(handler)
	})
}

// AddEventHandlerWithResyncPeriod adds handler with resyncPeriod to the informer of
// every namespace.
func (m *multiNamespaceInformer) AddEventHandlerWithResyncPeriod(
	handler toolscache.ResourceEventHandler, resyncPeriod time.Duration,
) (toolscache.ResourceEventHandlerRegistration, error) {
	return m.register(func(i crcache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandlerWithResyncPeriod(handler, resyncPeriod)
	})
}

// AddEventHandlerWithOptions adds handler with options to the informer of every
// namespace.
func (m *multiNamespaceInformer) AddEventHandlerWithOptions(
	handler toolscache.ResourceEventHandler, options toolscache.HandlerOptions,
) (toolscache.ResourceEventHandlerRegistration, error) {
	return m.register(func(i crcache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandlerWithOptions(handler, options)
	})
}

// register adds a handler to every informer; if one fails, the registrations already
// made are removed and the error returned.
func (m *multiNamespaceInformer) register(
	add func(crcache.Informer) (toolscache.ResourceEventHandlerRegistration, error),
) (toolscache.ResourceEventHandlerRegistration, error) {
	regs := make([]toolscache.ResourceEventHandlerRegistration, 0, len(m.informers))
	for i, inf := range m.informers {
		reg, err := add(inf)
		if err != nil {
			for j, done := range regs {
				_ = m.informers[j].RemoveEventHandler(done)
			}
			return nil, fmt.Errorf("adding event handler for namespace %q: %w", m.names[i], err)
		}
		regs = append(regs, reg)
	}
	checkers := make([]toolscache.DoneChecker, len(regs))
	for i, reg := range regs {
		checkers[i] = reg.HasSyncedChecker()
	}
	return &multiNamespaceRegistration{owner: m, regs: regs, synced: doneAll{names: m.names, checkers: checkers}}, nil
}

// RemoveEventHandler removes a registration returned by this informer from every
// namespace. Removing it again is a no-op; a registration of another informer is an
// error.
func (m *multiNamespaceInformer) RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error {
	reg, ok := handle.(*multiNamespaceRegistration)
	if !ok || reg.owner != m {
		return errors.New("registration was not returned by this multi-namespace informer")
	}
	var errs []error
	for i, inf := range m.informers {
		if err := inf.RemoveEventHandler(reg.regs[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// AddIndexers adds indexers to the informer of every namespace.
func (m *multiNamespaceInformer) AddIndexers(indexers toolscache.Indexers) error {
	for i, inf := range m.informers {
		if err := inf.AddIndexers(indexers); err != nil {
			return fmt.Errorf("namespace %q: %w", m.names[i], err)
		}
	}
	return nil
}

// HasSynced reports whether the informer of every namespace has synced.
func (m *multiNamespaceInformer) HasSynced() bool {
	for _, inf := range m.informers {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// HasSyncedChecker returns a checker whose channel closes when every namespace has synced.
func (m *multiNamespaceInformer) HasSyncedChecker() toolscache.DoneChecker {
	return &m.synced
}

// IsStopped reports whether the informers of all namespaces have stopped.
func (m *multiNamespaceInformer) IsStopped() bool {
	for _, inf := range m.informers {
		if !inf.IsStopped() {
			return false
		}
	}
	return true
}

// multiNamespaceRegistration is the registration of a handler added to a
// multiNamespaceInformer: one registration per namespace.
type multiNamespaceRegistration struct {
	owner  *multiNamespaceInformer
	regs   []toolscache.ResourceEventHandlerRegistration
	synced doneAll
}

// HasSynced reports whether the handler has processed the initial list of every namespace.
func (r *multiNamespaceRegistration) HasSynced() bool {
	for _, reg := range r.regs {
		if !reg.HasSynced() {
			return false
		}
	}
	return true
}

// HasSyncedChecker returns a checker whose channel closes when HasSynced turns true.
func (r *multiNamespaceRegistration) HasSyncedChecker() toolscache.DoneChecker {
	return &r.synced
}

// doneAll is a DoneChecker that is done when all of its checkers are. Its channel is
// made, with one goroutine waiting on the checkers, on the first call of Done.
type doneAll struct {
	names    []string
	checkers []toolscache.DoneChecker

	once sync.Once
	done chan struct{}
}

// Name lists the checkers' names by namespace.
func (d *doneAll) Name() string {
	parts := make([]string, len(d.checkers))
	for i, c := range d.checkers {
		parts[i] = fmt.Sprintf("%q: %s", d.names[i], c.Name())
	}
	return strings.Join(parts, ", ")
}

// Done returns a channel closed once every checker's channel is closed.
func (d *doneAll) Done() <-chan struct{} {
	d.once.Do(func() {
		d.done = make(chan struct{})
		go func() {
			for _, c := range d.checkers {
				<-c.Done()
			}
			close(d.done)
		}()
	})
	return d.done
}
