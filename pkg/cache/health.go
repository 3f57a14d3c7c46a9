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
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"

	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/deltacache/deltacache/pkg/informer"
)

// DefaultStallTimeout is the stall timeout of HealthzCheck when none is given. It is
// above the longest quiet spell of a healthy informer: a watch without bookmarks on a
// kind that does not change is re-opened every 5 to 10 minutes, and abandoned a minute
// after its server-side timeout if the connection died.
const DefaultStallTimeout = 15 * time.Minute

// DefaultRefusedNotReadyAfter is how long a synced informer may be refused (Forbidden,
// Unauthorized) before the readyz check fails, when Config.RefusedNotReadyAfter is
// zero. A minute is past a few backoff retries (a binding being replaced, a token
// being rotated) and well inside the minutes a revoked permission would otherwise go
// unnoticed.
const DefaultRefusedNotReadyAfter = time.Minute

// ReadyzCheck returns a healthz.Checker for the Manager's readyz endpoint
// (mgr.AddReadyzCheck): it fails before the cache has started and while any informer
// of the cache has not synced, with one line per such informer, naming its resource
// and kind and its last list/watch error (one line, shown wrapped here):
//
//	apps.demo.deltacache.io: forbidden: App.v1alpha1.demo.deltacache.io: list failed (Forbidden):
//	apps.demo.deltacache.io is forbidden: User "..." cannot list ...
//
// a line per kind a controller waits for because it is not served (its CRD is not
// installed yet, see GetInformer), and passes when every informer has synced and no
// kind is waited for (removed and stopped informers do not
// count). It also fails, with a line per kind,
//
//	sprockets.obs.deltacache.io: refused (forbidden) for 1m5s: Sprocket.v1.obs.deltacache.io (unstructured): ...
//
// a line per event handler of a synced informer that has not synced (see
// handlerLines: the handler, its initial objects delivered out of the total, its
// rate), and fails when an informer that has synced has been refused (its LastError a Forbidden or
// Unauthorized *informer.ListWatchError) for longer than Config.RefusedNotReadyAfter:
// its data then no longer changes. The healthz check does not count that. controller-runtime's Manager withholds the reason on /readyz and logs it;
// /readyz/<check name> shows it. It never blocks.
func (c *Cache) ReadyzCheck() healthz.Checker {
	return func(*http.Request) error { return c.notReady() }
}

// HealthzCheck returns a healthz.Checker for the Manager's healthz (liveness) endpoint:
// it fails when an informer that has synced has not heard from the API server (no watch
// event, no bookmark, no watch opened, no list installed) for longer than stallTimeout,
// naming the resource, how long, and the informer's last error; 0 or less means
// DefaultStallTimeout. Informers that have not synced yet are the readyz check's
// concern, so a missing permission makes the pod unready, not restarted. The check
// passes before the cache has started. It never blocks.
func (c *Cache) HealthzCheck(stallTimeout time.Duration) healthz.Checker {
	if stallTimeout <= 0 {
		stallTimeout = DefaultStallTimeout
	}
	return func(*http.Request) error { return c.stalled(stallTimeout, time.Now()) }
}

// ReadyzCheck returns c.ReadyzCheck() when c is a deltacache *Cache (what
// mgr.GetCache() returns with NewCache: cache.New or cache.NewWith), and otherwise a
// checker that always fails saying so:
//
//	mgr.AddReadyzCheck("informers", dcache.ReadyzCheck(mgr.GetCache()))
func ReadyzCheck(c crcache.Cache) healthz.Checker {
	if dc, ok := c.(*Cache); ok {
		return dc.ReadyzCheck()
	}
	return notDeltacache(c)
}

// HealthzCheck returns c.HealthzCheck(stallTimeout) when c is a deltacache *Cache, and
// otherwise a checker that always fails saying so:
//
//	mgr.AddHealthzCheck("informers", dcache.HealthzCheck(mgr.GetCache(), 0))
func HealthzCheck(c crcache.Cache, stallTimeout time.Duration) healthz.Checker {
	if dc, ok := c.(*Cache); ok {
		return dc.HealthzCheck(stallTimeout)
	}
	return notDeltacache(c)
}

func notDeltacache(c crcache.Cache) healthz.Checker {
	return func(*http.Request) error {
		return fmt.Errorf("the manager's cache is a %T, not deltacache's: "+
			"set manager.Options.NewCache to cache.New or cache.NewWith", c)
	}
}

// scopeState is one scoped informer as the checks see it.
type scopeState struct {
	key   entryKey
	scope *scopedInformer
}

// runningScopes returns whether the cache has started and its scoped informers that
// have not stopped.
func (c *Cache) runningScopes() (bool, []scopeState) {
	m := c.informers
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []scopeState
	for key, e := range m.entries {
		for _, s := range e.scopes {
			select {
			case <-s.stopped:
			default:
				out = append(out, scopeState{key: key, scope: s})
			}
		}
	}
	return m.started, out
}

// notReady is the readyz check: nil when started and every running informer synced.
func (c *Cache) notReady() error {
	started, scopes := c.runningScopes()
	if !started {
		return errors.New("the informer cache has not started")
	}
	lines := append(c.missingKindLines(), c.foreignNotReadyLines()...)
	now := c.clock.Now()
	for _, s := range scopes {
		inf := s.scope.informer
		if inf.HasSynced() {
			if line, ok := c.refusedLine(s.key, inf, now); ok {
				lines = append(lines, line)
			}
			lines = append(lines, c.handlerLines(s.key, inf)...)
			continue
		}
		if last := inf.LastError(); last != nil {
			lines = append(lines, fmt.Sprintf("%s: %s: %v", c.resourceName(s.key), reasonPhrase(last), last))
		} else {
			lines = append(lines, fmt.Sprintf("%s: not synced yet: %s has not completed its initial list",
				c.resourceName(s.key), inf.Name()))
		}
	}
	return joinLines(lines)
}

// refusedLine is the readyz line of a synced informer refused (Forbidden,
// Unauthorized) for longer than Config.RefusedNotReadyAfter at now; ok false otherwise.
func (c *Cache) refusedLine(key entryKey, inf *informer.SharedIndexInformer, now time.Time) (string, bool) {
	bound := c.settings.RefusedNotReadyAfter
	last, since := inf.LastErrorSince()
	if bound < 0 || last == nil {
		return "", false
	}
	lwe, ok := errors.AsType[*informer.ListWatchError](last)
	if !ok || (lwe.Reason != informer.ReasonForbidden && lwe.Reason != informer.ReasonUnauthorized) {
		return "", false
	}
	refused := now.Sub(since)
	if refused <= bound {
		return "", false
	}
	return fmt.Sprintf("%s: refused (%s) for %s, serving its data as it was then: %v",
		c.resourceName(key), reasonPhrase(last), refused.Round(time.Second), last), true
}

// stalled is the healthz check at time now.
func (c *Cache) stalled(timeout time.Duration, now time.Time) error {
	_, scopes := c.runningScopes()
	var lines []string
	for _, s := range scopes {
		inf := s.scope.informer
		if !inf.HasSynced() {
			continue
		}
		quiet := now.Sub(inf.LastActivity())
		if quiet <= timeout {
			continue
		}
		line := fmt.Sprintf("%s: stalled: %s has had no watch event, bookmark or successful (re)watch for %s",
			c.resourceName(s.key), inf.Name(), quiet.Round(time.Second))
		if last := inf.LastError(); last != nil {
			line += fmt.Sprintf("; last error: %v", last)
		}
		lines = append(lines, line)
	}
	return joinLines(lines)
}

// resourceName names key's resource as "<plural>.<group>" ("pods",
// "apps.demo.deltacache.io"), as API errors do; the kind key when the RESTMapper does
// not know it.
func (c *Cache) resourceName(key entryKey) string {
	mapping, err := c.mapper.RESTMapping(key.gvk.GroupKind(), key.gvk.Version)
	if err != nil {
		return key.String()
	}
	return mapping.Resource.GroupResource().String()
}

// reasonPhrase renders the Reason of a *informer.ListWatchError in lower case words:
// "Forbidden" → "forbidden", "TooLargeResourceVersion" → "too large resource version".
func reasonPhrase(err error) string {
	var lwe *informer.ListWatchError
	if !errors.As(err, &lwe) {
		return "error"
	}
	var b strings.Builder
	for i, r := range lwe.Reason {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte(' ')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// joinLines returns nil for no lines, else one error with the lines sorted, "; "
// between them.
func joinLines(lines []string) error {
	if len(lines) == 0 {
		return nil
	}
	slices.Sort(lines)
	return errors.New(strings.Join(lines, "; "))
}
