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
	"time"

	"github.com/deltacache/deltacache/pkg/informer"
)

// handlerLines are the readyz lines of the event handlers of a synced informer that
// have not synced (HasSynced, which a controller-runtime controller waits for before it
// starts): one per handler, naming it by its metric label (the controller's handler,
// see handlerLabel), with its initial objects delivered out of the total and its rate:
//
//	pods: event handler "source.Kind handler.EnqueueRequestForObject" not synced:
//	120 of 300 initial objects delivered in 12s (10.0/s)
func (c *Cache) handlerLines(key entryKey, inf *informer.SharedIndexInformer) []string {
	var lines []string
	for _, p := range inf.HandlersNotSynced() {
		if !p.InformerSynced {
			continue // the informer's own sync is reported
		}
		lines = append(lines, fmt.Sprintf("%s: event handler %q not synced: %s",
			c.resourceName(key), p.Label, progressPhrase(p)))
	}
	return lines
}

// progressPhrase renders p as "120 of 300 initial objects delivered in 12s (10.0/s)".
func progressPhrase(p informer.InitialProgress) string {
	return fmt.Sprintf("%d of %d initial objects delivered in %s (%.1f/s)",
		p.Delivered, p.Total, p.Elapsed.Round(time.Second), p.Rate())
}

// logNotSynced logs, when a WaitForCacheSync ends unsynced because its context did, what
// held it back: the informers that have not synced (with their last error) and the
// event handlers of synced informers that have not (with their progress).
func (c *Cache) logNotSynced() {
	_, scopes := c.runningScopes()
	var informers, handlers []string
	for _, s := range scopes {
		inf := s.scope.informer
		if !inf.HasSynced() {
			line := c.resourceName(s.key)
			if last := inf.LastError(); last != nil {
				line += fmt.Sprintf(" (%v)", last)
			}
			informers = append(informers, line)
			continue
		}
		handlers = append(handlers, c.handlerLines(s.key, inf)...)
	}
	if len(informers) == 0 && len(handlers) == 0 {
		return
	}
	c.log.Info("WaitForCacheSync ended before the cache synced; held back by",
		"informersNotSynced", informers, "handlersNotSynced", handlers)
}
