package informer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// ConsistencyCheck compares, at a low rate, an informer's store with the
// server and heals drift with a relist: a safety net for watches that lose
// events without breaking. The zero value is off. Each check lists the
// informer's scope (its shard, if sharded) as metadata with RV "", compares
// uid and resourceVersion per key, reports the missing, extra and stale
// objects the RVs prove (DriftReport, logged) and relists. Decisions and
// costs: docs/architecture.md section 9, docs/consistency-check.md.
type ConsistencyCheck struct {
	// Interval between checks (each waits a random 0–10% more); 0 = off.
	Interval time.Duration
	// List lists one page of the informer's scope (its namespace and
	// selectors) as metadata, honouring opts' Limit, Continue,
	// ResourceVersion and ShardSelector. Required (nil = off).
	List func(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error)
	// Get reads one object's metadata, to confirm a missing one; nil = not
	// confirmed.
	Get func(ctx context.Context, namespace, name string) (*metav1.PartialObjectMetadata, error)
	// PageSize of the LIST; 0 = 500.
	PageSize int64
	// Settle bounds the wait for the store to reach the list's RV; 0 =
	// Interval/2, at most 30 s.
	Settle time.Duration
}

// enabled reports whether checks run.
func (c ConsistencyCheck) enabled() bool { return c.Interval > 0 && c.List != nil }

// Kinds of drift, as the "drift" label of deltacache_consistency_drift_objects_total.
const (
	driftMissing = "missing"
	driftExtra   = "extra"
	driftStale   = "stale"
)

const (
	// maxDriftGets bounds the Gets one check sends to confirm missing objects.
	maxDriftGets = 10
	// maxDriftKeysLogged is how many keys of each drift the log line names.
	maxDriftKeysLogged = 3
)

// DriftReport is the outcome of one consistency check.
type DriftReport struct {
	Missing, Extra, Stale []string // the keys that drifted, sorted
	ResourceVersion       string   // of the server's list
	Objects               int      // in the server's list
	Requests              int      // sent: LIST pages and Gets
	// Skipped says why the check compared nothing (the informer's shard was
	// changing, or is empty); "" for a check that compared.
	Skipped string
}

// Drifted reports whether the store differed from the server.
func (r *DriftReport) Drifted() bool {
	return r != nil && len(r.Missing)+len(r.Extra)+len(r.Stale) > 0
}

// LastDriftReport returns the report of the last completed consistency
// check; ok is false before the first.
func (s *SharedIndexInformer) LastDriftReport() (DriftReport, bool) {
	s.checkMu.Lock()
	defer s.checkMu.Unlock()
	if s.lastDrift == nil {
		return DriftReport{}, false
	}
	return *s.lastDrift, true
}

// consistencyLoop runs the checks until ctx ends, from the informer's sync on.
func (s *SharedIndexInformer) consistencyLoop(ctx context.Context) {
	cc := s.opts.ConsistencyCheck
	select {
	case <-s.fifo.Synced():
	case <-ctx.Done():
		return
	}
	log := s.log
	timer := s.clock.NewTimer(jittered(cc.Interval))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
		}
		report, err := s.CheckConsistency(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil || report.Skipped == "" { // a skipped check is no check: not counted
			s.obs.Load().consistencyChecked(report, err)
		}
		switch {
		case err != nil:
			log.Error(err, "Consistency check failed")
		case report.Skipped != "":
			log.V(1).Info("Consistency check skipped", "reason", report.Skipped)
		case report.Drifted():
			log.Info("Cache drifted from the API server; relisting",
				"missing", len(report.Missing), "extra", len(report.Extra), "stale", len(report.Stale),
				"missingKeys", firstKeys(report.Missing), "extraKeys", firstKeys(report.Extra),
				"staleKeys", firstKeys(report.Stale), "resourceVersion", report.ResourceVersion)
			if r := s.getReflector(); r != nil {
				r.RequestRelist(fmt.Sprintf("consistency check: %d missing, %d extra, %d stale",
					len(report.Missing), len(report.Extra), len(report.Stale)))
			}
		default:
			log.V(1).Info("Consistency check found no drift", "objects", report.Objects,
				"resourceVersion", report.ResourceVersion, "requests", report.Requests)
		}
		timer.Reset(jittered(cc.Interval))
	}
}

func jittered(d time.Duration) time.Duration {
	return d + time.Duration(rand.Int64N(int64(d)/10+1))
}

func firstKeys(keys []string) []string {
	if len(keys) > maxDriftKeysLogged {
		return keys[:maxDriftKeysLogged]
	}
	return keys
}

// serverMeta is what a check keeps of a listed object.
type serverMeta struct {
	uid types.UID
	rv  uint64
}

// CheckConsistency runs one check now (see ConsistencyCheck) and returns its
// report; it does not relist. It needs Options.ConsistencyCheck.List and a
// running informer.
func (s *SharedIndexInformer) CheckConsistency(ctx context.Context) (*DriftReport, error) {
	cc := s.opts.ConsistencyCheck
	if cc.List == nil {
		return nil, fmt.Errorf("informer %s has no consistency check List", s.name)
	}
	sel := s.shard.Load()
	if skipped := s.shardUnsettled(sel); skipped != "" {
		return s.recordCheck(&DriftReport{Skipped: skipped}), nil
	}
	s.removals.begin() // before the list: what leaves the store from now on was listed
	defer s.removals.end()
	server, listRV, requests, err := s.listMetadata(ctx, cc, sel)
	if err != nil {
		return nil, err
	}
	report := &DriftReport{ResourceVersion: listRV, Objects: len(server), Requests: requests}
	r, ok := parseRV(listRV)
	if !ok {
		return nil, fmt.Errorf("consistency check of %s: list resourceVersion %q is not an integer", s.name, listRV)
	}
	s.settle(ctx, cc, r)

	missing, extra, stale := s.compare(server, r)
	if len(missing)+len(extra)+len(stale) > 0 {
		// Read the candidates again once what was queued is applied: an event in
		// flight at the comparison is not drift.
		s.settle(ctx, cc, r)
		missing, extra, stale = s.recheck(server, r, missing, extra, stale)
	}
	if s.shard.Load() != sel {
		return s.recordCheck(&DriftReport{Skipped: shardChangedDuringCheck}), nil
	}
	if cc.Get != nil {
		confirmed := missing[:0]
		for i, key := range missing {
			if i >= maxDriftGets {
				confirmed = append(confirmed, missing[i:]...)
				break
			}
			report.Requests++
			if s.missingConfirmed(ctx, cc, key, server[key]) {
				confirmed = append(confirmed, key)
			}
		}
		missing = confirmed
	}
	if s.shard.Load() != sel {
		return s.recordCheck(&DriftReport{Skipped: shardChangedDuringCheck}), nil
	}
	slices.Sort(missing)
	slices.Sort(extra)
	slices.Sort(stale)
	report.Missing, report.Extra, report.Stale = missing, extra, stale
	return s.recordCheck(report), nil
}

// Reasons of a skipped check (DriftReport.Skipped).
const (
	shardChanging           = "the shard selector changed and the relist of the new shard is not handed to the store yet"
	shardChangedDuringCheck = "the shard selector changed during the check"
	shardEmpty              = "the shard is empty"
)

// shardUnsettled returns why a check of the shard sel cannot compare now, ""
// if it can: always for an unsharded informer (nil sel).
func (s *SharedIndexInformer) shardUnsettled(sel *ShardSelector) string {
	switch {
	case sel == nil:
		return ""
	case sel.Empty():
		return shardEmpty
	case !s.ShardSettled():
		return shardChanging
	}
	return ""
}

// recordCheck keeps report as the last one (LastDriftReport) and returns it.
func (s *SharedIndexInformer) recordCheck(report *DriftReport) *DriftReport {
	s.checkMu.Lock()
	s.lastDrift = report
	s.checkMu.Unlock()
	return report
}

// listMetadata lists the scope's metadata in pages at RV "": the objects of
// the shard sel only (nil: all), asked of the server with the shardSelector
// of the Reflector's requests and filtered here too.
func (s *SharedIndexInformer) listMetadata(
	ctx context.Context, cc ConsistencyCheck, sel *ShardSelector,
) (map[string]serverMeta, string, int, error) {
	limit := cc.PageSize
	if limit <= 0 {
		limit = defaultPageSize
	}
	shardSelector, _ := sel.wire()
	out := make(map[string]serverMeta)
	listRV, cont, requests := "", "", 0
	for {
		requests++
		page, err := cc.List(ctx, metav1.ListOptions{Limit: limit, Continue: cont, ShardSelector: shardSelector})
		if err != nil {
			return nil, "", requests, fmt.Errorf("consistency check of %s: list: %w", s.name, err)
		}
		if listRV == "" {
			listRV = page.ResourceVersion
		}
		for i := range page.Items {
			m := &page.Items[i]
			if !sel.Matches(m) {
				continue
			}
			rv, _ := parseRV(m.ResourceVersion)
			out[metaKey(m.Namespace, m.Name)] = serverMeta{uid: m.UID, rv: rv}
		}
		if cont = page.Continue; cont == "" {
			return out, listRV, requests, nil
		}
	}
}

func metaKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// storeRV is the RV the store has caught up with: the last one seen, once
// the DeltaFIFO has nothing left to apply.
func (s *SharedIndexInformer) storeRV() (uint64, bool) {
	if s.fifo.Len() > 0 {
		return 0, false
	}
	return parseRV(s.LastSyncResourceVersion())
}

// settle waits until the store has caught up with rv, or Settle passed.
func (s *SharedIndexInformer) settle(ctx context.Context, cc ConsistencyCheck, rv uint64) {
	limit := cc.Settle
	if limit <= 0 {
		limit = min(cc.Interval/2, 30*time.Second)
	}
	deadline := s.clock.Now().Add(limit)
	for {
		if at, ok := s.storeRV(); ok && at >= rv {
			return
		}
		if !s.clock.Now().Before(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-s.clock.After(20 * time.Millisecond):
		}
	}
}

// storeMeta returns the uid and RV of key in the store.
func (s *SharedIndexInformer) storeMeta(key string) (serverMeta, bool) {
	obj, ok, err := s.indexer.GetByKey(key)
	if err != nil || !ok {
		return serverMeta{}, false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return serverMeta{}, false
	}
	rv, _ := parseRV(m.GetResourceVersion())
	return serverMeta{uid: m.GetUID(), rv: rv}, true
}

// compare returns the drift candidates of the store against server, listed at
// RV listRV, as far as the store's RV (read once, before) proves them.
func (s *SharedIndexInformer) compare(server map[string]serverMeta, listRV uint64) (missing, extra, stale []string) {
	at, _ := parseRV(s.indexer.LastStoreSyncResourceVersion())
	for key, sm := range server {
		if d := s.classify(key, sm, true, at); d != "" {
			if d == driftMissing {
				missing = append(missing, key)
			} else {
				stale = append(stale, key)
			}
		}
	}
	for _, key := range s.indexer.ListKeys() {
		if _, ok := server[key]; ok {
			continue
		}
		if at >= listRV && s.classify(key, serverMeta{}, false, at) == driftExtra && s.extraAt(key, listRV) {
			extra = append(extra, key)
		}
	}
	return missing, extra, stale
}

// recheck keeps the candidates that still drift.
func (s *SharedIndexInformer) recheck(server map[string]serverMeta, listRV uint64,
	missing, extra, stale []string,
) (m2, e2, s2 []string) {
	at, _ := parseRV(s.indexer.LastStoreSyncResourceVersion())
	for _, key := range missing {
		if s.classify(key, server[key], true, at) == driftMissing {
			m2 = append(m2, key)
		}
	}
	for _, key := range stale {
		if s.classify(key, server[key], true, at) == driftStale {
			s2 = append(s2, key)
		}
	}
	for _, key := range extra {
		if s.extraAt(key, listRV) {
			e2 = append(e2, key)
		}
	}
	return m2, e2, s2
}

// classify returns driftMissing, driftStale, driftExtra or "" for key, listed (onServer) as sm,
// given the store's RV at: only what at proves counts.
func (s *SharedIndexInformer) classify(key string, sm serverMeta, onServer bool, at uint64) string {
	st, inStore := s.storeMeta(key)
	switch {
	case !onServer:
		if inStore {
			return driftExtra
		}
		return ""
	case s.fifo.pending(key):
		// A delta of key is queued or being applied (a settled shard's
		// relist is queued, not yet in the store: ShardSettled): the store
		// is about to change, and at does not cover it.
		return ""
	case !inStore && s.removals.removed(key):
		// Deleted at the server after the list (see checkRemovals).
		return ""
	case !inStore:
		if sm.rv <= at {
			return driftMissing
		}
	case st.rv < sm.rv && sm.rv <= at:
		return driftStale
	}
	return ""
}

// extraAt reports whether key is in the store at an RV no newer than listRV:
// it existed then, so its absence from the list means it was deleted.
func (s *SharedIndexInformer) extraAt(key string, listRV uint64) bool {
	st, ok := s.storeMeta(key)
	return ok && st.rv <= listRV
}

// missingConfirmed Gets key: it is missing when it exists with the listed uid
// and the store, past its RV, still lacks it.
func (s *SharedIndexInformer) missingConfirmed(
	ctx context.Context, cc ConsistencyCheck, key string, sm serverMeta,
) bool {
	namespace, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return false // not a key of ours
	}
	m, err := cc.Get(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		return true // could not confirm: the relist costs less than a missed object
	}
	if _, inStore := s.storeMeta(key); inStore || m.UID != sm.uid || s.fifo.pending(key) || s.removals.removed(key) {
		return false
	}
	rv, _ := parseRV(m.ResourceVersion)
	at, _ := parseRV(s.indexer.LastStoreSyncResourceVersion())
	return rv <= at
}
