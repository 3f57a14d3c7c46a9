// Package informer is deltacache's own implementation of the client-go
// informer machinery: Reflector → DeltaFIFO → Indexer → SharedIndexInformer,
// with compact storage (objects held encoded) on the way. The design of
// record — the data path stage by stage, the package map, the vocabulary and
// the invariants with the tests that pin them — is docs/architecture.md in
// the repository.
//
// Its files, in data-path order:
//
//	listwatch.go              ListerWatcher adapters (typed REST, dynamic, metadata-only)
//	gvk_watch.go              a metadata watch that sets the GVK on every event
//	reflector.go              Reflector: Run, ListAndWatch, the paginated list, install, the watch
//	backoff.go                the Reflector's retry delays
//	errors.go                 ListWatchError, the Reasons, resourceVersion comparison
//	progress.go               logging of a long list's progress
//	watch_list.go             the streamed list (WatchList, the default)
//	table.go                  a dense key → object table: collects a WatchList relist
//	initial_stream.go         the first list, handed to the DeltaFIFO in parts as it arrives
//	reflector_shard.go        the Reflector's shard selector: request option and filter
//	encoded_object.go         early encoding: the Reflector's objects encoded before the queue
//	compact_store.go          the Indexer's compact side: encode, decode, lazy handler objects, GetInto
//	storage_codec.go          StorageCodec, DecoderInto and the protobuf codec
//	quantity_restore.go       puts back the Quantity string caches a protobuf Marshal fills
//	protobuf_decoder.go       the plan-driven protobuf decoder (strings alias the stored bytes)
//	protobuf_plan.go          the decoder's per-type plans
//	cbor_codec.go             the CBOR codecs (typed CRD types, unstructured objects)
//	delta_fifo.go             DeltaFIFO: key → Deltas, queue of keys, bounded per key; Replace, popBatch
//	delta_fifo_filter.go      the DeltaFIFO's admission filter and Evicted deltas (sharding)
//	informer.go               SharedIndexInformer: the pop loop (store first, then handlers), resync
//	indexer_batch.go          the pop loop's write path: batches, and relists applied whole
//	indexer.go                Indexer: lock-free reads, single writes, Replace, AddIndexers
//	shard_table.go            the Indexer's content: per-key cells in copy-on-write hash shards
//	hash_trie.go              the persistent hash trie (CHAMP) of the Indexer's indexes
//	handler_queue.go          HandlerRegistration: one goroutine and one merging queue per handler
//	informer_shard.go         moving a running informer to another shard selector
//	shard_selector.go         ShardSelector and HashRange: KEP-5866's selector, hash and matching
//	shard_selector_server.go  what the API server accepts: selector length, coarsening
//	consistency_check.go      the drift check: the store compared with a metadata-only LIST
//	metrics.go                Prometheus metrics of the pipeline and of each handler
//	doc.go                    this overview
//
// Tests use the scriptable fake ListerWatcher of package informertest.
//
// It uses client-go's interfaces and shared types (toolscache.ListerWatcher,
// ResourceEventHandler, ResourceEventHandlerRegistration, DoneChecker,
// DeletedFinalStateUnknown, Indexers, TransformFunc, Store, Indexer,
// SharedIndexInformer, Controller) so that it plugs into controller-runtime,
// but none of client-go's machinery behind them (a client-go Reflector is
// built, never run, only as the argument client-go's WatchErrorHandler type
// takes). It knows nothing of controller-runtime.
//
// # Semantics shared with client-go (v0.37)
//
//   - The Reflector lists (streaming the list through a watch when the server
//     supports it, as client-go does by default since v0.35), installs the
//     list (the first one is handed to the store as it arrives, see
//     initial_stream.go; a relist Replaces it whole), then watches from the
//     list's resourceVersion with bookmarks; a watch that ends normally is re-opened from the last RV;
//     410 Expired/Gone or "too large resource version" (as a status cause,
//     or only in the message from older servers) causes a relist, at once
//     the first time in a minute, else after the backoff; other errors back
//     off (0.8s doubling to 30s, full jitter, reset after 2 minutes without
//     failures) and relist.
//   - A relist emits a Replaced delta per listed object and a
//     toolscache.DeletedFinalStateUnknown tombstone for every key that is
//     stored or queued but no longer listed.
//   - The store is updated before handlers are notified. Handlers get
//     OnAdd(obj, isInInitialList), OnUpdate(old, new), OnDelete(obj or
//     tombstone); updates whose resourceVersion did not change (resyncs, and
//     relisted objects that did not change) go only to handlers due for
//     resync. (client-go counts every handler as due until its first resync
//     check, which never comes when no handler has a resync period; so with
//     resync 0 its handlers get OnUpdate(obj, obj) for each unchanged object
//     of a relist, ours do not.)
//   - A registration's HasSynced becomes true when the informer has synced
//     and the handler has processed every object of the initial list.
//   - The transform runs exactly once per received object (in the Reflector,
//     as it is received: listed, streamed or watched), before it is queued;
//     never on bookmarks, tombstones or resyncs.
//
// # Compact storage
//
// With Options.StorageCodec set, the store holds objects encoded and decodes
// them on every read, which replaces the deep copy a reader makes anyway.
// The encoding happens early: the Reflector encodes each object right after
// the transform, with its index values (encoded_object.go), so a list of N
// objects is never held decoded at once and the encoding runs on the
// Reflector's goroutine. A listed object is queued as bytes only; a watched
// one also keeps its decoded object, which handlers receive as is. A
// handler's old object (of an update) is decoded only when a handler is
// about to receive it. An object the codec cannot encode is stored decoded
// and deep-copied on read. Indexer.GetInto decodes straight into the
// caller's object.
//
// # Where we go beyond client-go
//
// Bounded queues. Both queues coalesce per key, so their memory is
// O(distinct keys), not O(updates), whatever the event rate and however slow
// a handler is; a handler's queue also keeps two notifications per
// re-creation of a key (deleted and created again) while the handler is
// behind, because it never merges an object's deletion away.
//
// DeltaFIFO rule (M is a change: Added, Updated, Replaced or Sync; D a delete):
//
//	M + M     → one M with the newest object and the stronger type
//	            (Added > Updated > Replaced > Sync): Added+Updated → Added(latest),
//	            Updated+Updated → Updated(latest)
//	D + D     → one D (the newer, unless it is a tombstone)
//	M + D     → M, D           (kept: a deletion)
//	D + M     → D, M           (kept: a re-creation)
//	D, M + D  → D              (re-created and deleted again while queued)
//
// so a key holds at most three Deltas.
//
// Handler queue rule (per registration): a key's notifications stay the
// server's sequence of the key's lives (objects, by UID), each shortened to
// its newest state:
//
//	Add + Update    → Add(newest)                 (isInInitialList kept)
//	Update + Update → Update(oldest old, newest new)
//	Add + Delete    → Add, Delete                 (never nothing: see below)
//	Update + Delete → Delete
//	Delete + Add    → Delete, Add                 (the object was re-created)
//	Delete + Delete → the first Delete if both have one UID, else both
//
// so a handler is told of every object it could have been told about, and of
// its deletion, even when both happen while it is behind: client-go's
// handlers are (a readiness or expectations count that observes adds and
// deletes stays balanced), and controller-runtime's read-your-writes client
// waits for the Delete of every UID it deleted. A key holds at most
// 1 + 2×(re-creations while its handler is behind) notifications. Keys are
// delivered in the order they were first queued; notifications of one key in
// order.
//
// No lock held while processing. The pop loop takes up to 4096 queued keys
// at once, each with all its Deltas, without holding the queue lock, so the
// Reflector never waits for it; it applies them to the Indexer as one batch
// (readers never see a torn object, though they may see some of a batch's
// writes before others, as with single writes), then notifies handlers key
// by key in queue order.
// Handlers run on their own goroutines,
// so a stuck handler blocks neither the informer nor other handlers. Replace
// and Resync wait for the keys being processed, so the tombstones they
// compute are exact.
//
// A relist is published whole, as client-go's atomic Replace installs it.
// Every key a relist queued, and every key queued before it (the relist
// lists it, or tombstones it unless it ends in a delete), is popped as one
// batch, however many, and applied to a private copy of the store's table,
// published with one atomic store: readers see the store as it was until
// the relist is complete and then as relisted, never a mix, and handlers
// are notified after it is in, so a handler never counts objects from half
// a relist. The store's RV becomes the list's RV only then. The copy shares
// the objects and costs the store's structure once more while the relist
// is applied: with two indexes about 230 B per stored object (the copy's
// cells, shards and index nodes, and the old records kept for readers;
// BenchmarkRelistApply), plus about 140 B per relisted key of pop-loop
// buffers (the batch, its in-flight set and its notifications) that a
// batch of 4096 keys would bound. The first list is not a relist: nothing
// reads an unsynced informer, and it is stored as it arrives (see
// initial_stream.go).
//
// The store never goes back in time. Every list is a consistent read
// (resourceVersion ""), never a possibly stale watch-cache read at RV "0"
// (kubernetes#59848); a list whose RV is older than the RV already applied is
// not installed (ReasonStaleList). A continue token that expires mid-list
// restarts one unpaginated consistent list instead of stitching snapshots.
// The store's LastStoreSyncResourceVersion is the RV its content reflects:
// the newest RV of the objects applied, and, when the DeltaFIFO drains, the
// last RV it received (a list's or a bookmark's).
//
// Errors are values. Every list/watch error is a *ListWatchError with a
// Reason (Forbidden, NotFound, Expired, TooLargeResourceVersion, Transport,
// ...) that wraps the API error, so apierrors.IsForbidden and friends work;
// the informer keeps the last one as LastError until a list or watch
// succeeds, passes each to the WatchErrorHandler, and logs one line per
// backoff step with the reason and the next delay.
//
// Contained panics. A panicking handler is recovered, logged and counted
// (HandlerRegistration.Panics); delivery continues and the registration
// still syncs. Options.CrashOnHandlerPanic restores client-go's crash.
//
// Resync periods are per handler and exact: the informer wakes when the
// earliest handler is due, also for handlers added after start with a
// shorter period than any before (client-go stretches those).
//
// Stalled watches. A watch that outlives its own server-side timeout by a
// minute without closing is abandoned and re-opened (a dead connection);
// Options.WatchStallTimeout abandons a watch that is silent for less.
//
// Reads take no lock: a write never waits behind a long List. Each stored key has a cell
// holding its current record (object and index values) behind an atomic
// pointer; cells live in copy-on-write hash shards of about eight entries,
// and the indexes file the cells in persistent hash tries (CHAMP). Get,
// List, ByIndex and the other reads only do atomic loads; an update stores
// a new record in the key's cell (refiling the cell only if an index value
// changed), an add or delete also replaces one small shard; writers
// serialise on a mutex readers never take; the pop loop writes in batches
// (indexer_batch.go), a relist as a private copy of the table published at
// once; Replace and AddIndexers build a whole new table and publish it at
// once. A read sees every write that
// returned before it started; a List racing with writes may reflect some of
// them and not others, never a torn object, and ByIndex returns only objects
// filed under the value when read. A lock is not the only way to starve the
// writer: Go shares processors equally among runnable goroutines, so ten
// goroutines listing in a loop would leave it a tenth of one; a read that
// returns 1024 objects or more therefore yields its processor once.
// `make bench` (section B4; BenchmarkStoreUpdate in test/bench) measures
// writes/s with and without 10 listing goroutines, ours against client-go's
// store in the same run.
//
// Metrics. Every stage is measured (deltacache_informer_* and
// deltacache_handler_*, labelled group/version/kind/shape; see metrics.go and
// RegisterMetrics): objects stored, sync state and duration, list requests,
// pages and durations, watch starts, events by type and bookmarks, relists by
// cause, errors by operation and reason, freshness, DeltaFIFO depth, and per
// handler pending keys, call latency and panics. client-go has no reflector
// metrics.
//
// WatchList by default, never an endless wait. The initial list and every
// relist are streamed (a watch with sendInitialEvents=true,
// resourceVersionMatch=NotOlderThan and bookmarks at RV "", KEP-3157) until
// the bookmark annotated k8s.io/initial-events-end: the first list's
// transformed objects are handed to the DeltaFIFO in chunks of 256 as they
// arrive, a relist's are collected (table.go) and Replaced as a LIST's would
// be; the stream goes on as the watch. Our adapters pass these parameters through the REST, dynamic
// and metadata clients (the metadata adapter stamps the GVK on streamed
// events too) and opt out (IsWatchListSemanticsUnSupported) when bookmarks
// are disabled, since the server then never sends the end bookmark
// (as client-go's util/watchlist decides), or when the client opts out. A failed stream
// falls back to a paginated LIST for that attempt. A server that refuses
// WatchList (422/400), or whose stream falls silent for a whole
// WatchListTimeout period (default 10 s), does not end its initial events
// within three of them (and before the server-side watch timeout), or sends
// a MODIFIED or DELETED event before the end bookmark (the bookmark was
// dropped on the way: initial events are all ADDED), gets LIST within 30 s
// with the defaults, and for the rest of the
// informer's life; client-go waits forever, warning every 10 s. A slow but
// steady stream of a large list is not cut short.
// Options.DisableWatchList turns streaming off.
//
// A watch stream that loses an event without breaking is found by the
// consistency check (Options.ConsistencyCheck, off by default): at a low rate,
// a paginated metadata-only LIST at RV "" is compared with the store by uid
// and resourceVersion, the drift the RVs prove is counted and logged, and
// Reflector.RequestRelist heals it with a consistent relist.
//
// Sharding (KEP-5866). With Options.ShardSelector every LIST, WATCH and
// WatchList request carries shardSelector (shardRange terms over the 64-bit
// FNV-1a hash of the uid or the namespace). Whether the server honours it is
// learnt from ListMeta.ShardInfo of the first sharded list (a one-object
// LIST before a WatchList stream, which has no ListMeta), logged once and
// exported as deltacache_informer_shard_server_filtering; objects outside
// the selector are dropped before the store in either case, with the
// server's hash and range semantics. SetShardSelector moves a running
// informer to another shard: what leaves it is evicted (Evicted deltas of
// the DeltaFIFO's filter: no Delete notification), then the new shard is
// relisted. Package shard decides the shards of the replicas of an operator.
//
// Proof beyond unit tests: differential tests run one scenario through
// client-go's SharedIndexInformer and ours on the same fake and compare
// stores and handlers' views, naming the deliberate differences
// (differential_test.go); a seeded model-based test drives random churn,
// disconnects and 410s in LIST and WatchList modes (convergence_test.go,
// INFORMER_TEST_SEED replays); FuzzDeltaFIFOOperations and
// FuzzIndexerOperations check operation sequences against models; envtest
// tests prove against a real kube-apiserver that the initial list is
// streamed, over protobuf for the typed adapter and with GVKs for the
// metadata adapter (envtest_test.go).
package informer
