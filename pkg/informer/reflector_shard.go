package informer

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// ServerSharding is what the Reflector learnt of the server's support for
// shardSelector (KEP-5866).
type ServerSharding int32

// ServerSharding values: Unknown until a sharded list is answered; then
// Honoured if it carried ListMeta.ShardInfo (the server filters), else Ignored
// (no ShardedListAndWatch gate, or older than 1.36: the Reflector gets every
// object and filters on the client; memory shrinks, traffic does not).
const (
	ServerShardingUnknown ServerSharding = iota
	ServerShardingHonoured
	ServerShardingIgnored
)

func (s ServerSharding) String() string {
	switch s {
	case ServerShardingHonoured:
		return "honoured"
	case ServerShardingIgnored:
		return "ignored"
	default:
		return "unknown"
	}
}

// ShardSelector returns the selector the Reflector lists and watches with
// (nil: everything).
func (r *reflector) ShardSelector() *ShardSelector { return r.shard.Load() }

// shardList is the shard selector a list was made with, and the list's
// resourceVersion.
type shardList struct {
	sel *ShardSelector
	rv  string
}

// ListedShard returns the shard selector of the last list handed to the store
// (nil: every object); ok is false before the first list is installed. It is
// recorded once the list's Replace has queued every item.
func (r *reflector) ListedShard() (sel *ShardSelector, ok bool) {
	l := r.listedShard.Load()
	if l == nil {
		return nil, false
	}
	return l.sel, true
}

// recordShardList records that a list made with sel, at rv, was handed to
// the store (its Replace has queued every item).
func (r *reflector) recordShardList(sel *ShardSelector, rv string) {
	if l := r.listedShard.Load(); l == nil || l.sel != sel {
		r.listedShard.Store(&shardList{sel: sel, rv: rv})
	}
}

// ServerSharding reports whether the server honours the shard selector, as
// learnt from the first sharded list.
func (r *reflector) ServerSharding() ServerSharding { return ServerSharding(r.serverSharding.Load()) }

// SetShardSelector makes sel the Reflector's shard selector (nil: every
// object) and, if it changed, ends the current watch and relists with it (as
// RequestRelist). From the call on, received objects outside sel are dropped
// before they reach the store. The objects already stored that sel no longer
// selects are not the Reflector's business: see
// SharedIndexInformer.SetShardSelector, which evicts them first.
func (r *reflector) SetShardSelector(sel *ShardSelector) {
	// An equal selector keeps the current value (compared by identity with
	// the listed one: ListedShard). Only SharedIndexInformer.SetShardSelector
	// calls this, under its shard mutex.
	if r.shard.Load().Equal(sel) {
		return
	}
	r.shard.Store(sel)
	r.requestRelist(relistCauseShard, "shard selector changed")
}

// shardOptions sets the shard selector on a list or watch request: sel, or,
// when sel is too long for the server, the coarser selector of
// sel.forServer (logged once per Reflector); the client-side filter keeps
// applying sel itself.
func (r *reflector) shardOptions(ctx context.Context, o *metav1.ListOptions, sel *ShardSelector) {
	var wire *ShardSelector
	if o.ShardSelector, wire = sel.wire(); wire != sel && r.coarsened.CompareAndSwap(false, true) {
		r.logger(ctx).Info("Shard selector too long for the server: sending a coarser one and filtering the rest on the client",
			"reflector", r.name, "ranges", len(sel.Ranges), "sentRanges", len(wire.Ranges),
			"limit", maxShardSelectorLength)
	}
}

// keep reports whether a received object belongs to the shard sel (the shard
// filter, ShardSelector.admits; sel is not nil: admit calls keep only for a
// sharded informer); objects outside it are counted and
// dropped. With the server filtering, every object passes; the check also
// guards against a server that stops honouring the selector (an API server
// restarted without the gate, or one of several behind a load balancer
// without it).
func (r *reflector) keep(sel *ShardSelector, obj runtime.Object) bool {
	if sel.admits(obj) {
		return true
	}
	r.opts.metrics.shardFilteredObject()
	return false
}

// learnServerSharding records, from the first list answered to a sharded
// request, whether the server applied the selector: its ListMeta carries
// ShardInfo iff it did. It is learnt once; the decision is logged.
func (r *reflector) learnServerSharding(ctx context.Context, sel *ShardSelector, list runtime.Object) {
	if sel == nil || r.ServerSharding() != ServerShardingUnknown {
		return
	}
	state := ServerShardingIgnored
	if shardInfoOf(list) != nil {
		state = ServerShardingHonoured
	}
	if !r.serverSharding.CompareAndSwap(int32(ServerShardingUnknown), int32(state)) {
		return
	}
	log := r.logger(ctx)
	if state == ServerShardingHonoured {
		log.Info("Server filters by shard selector", "reflector", r.name, "shardSelector", sel.String())
		return
	}
	log.Info("Server ignored the shard selector (no shardInfo in its list; feature gate ShardedListAndWatch off?): "+
		"filtering on the client, so every object is still received", "reflector", r.name, "shardSelector", sel.String())
}

// probeServerSharding learns whether the server honours shardSelector before
// a WatchList stream, which carries no ListMeta: one LIST of at most one
// object with the selector. Errors are returned (the caller goes on with the
// stream: the client-side filter is applied either way).
func (r *reflector) probeServerSharding(ctx context.Context, sel *ShardSelector) error {
	if sel == nil || r.ServerSharding() != ServerShardingUnknown {
		return nil
	}
	opts := metav1.ListOptions{ResourceVersion: "", Limit: 1}
	r.shardOptions(ctx, &opts, sel)
	r.opts.metrics.listRequest()
	list, err := r.lw.ListWithContext(ctx, opts)
	if err != nil {
		return err
	}
	if _, err := meta.ListAccessor(list); err != nil {
		return fmt.Errorf("unable to understand list result %T: %w", list, err)
	}
	r.learnServerSharding(ctx, sel, list)
	return nil
}

// shardInfoOf returns the ShardInfo of a list: ListMeta's for typed and
// metadata-only lists, metadata.shardInfo for unstructured ones; nil if none.
func shardInfoOf(list runtime.Object) *metav1.ShardInfo {
	if s, ok := list.(metav1.ShardedListInterface); ok {
		return s.GetShardInfo()
	}
	if u, ok := list.(*unstructured.UnstructuredList); ok {
		if sel, found, _ := unstructured.NestedString(u.Object, "metadata", "shardInfo", "selector"); found {
			return &metav1.ShardInfo{Selector: sel}
		}
	}
	return nil
}
