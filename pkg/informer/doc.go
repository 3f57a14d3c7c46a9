// Package informer is deltacache's own client-go informer machinery
// (Reflector → DeltaFIFO → Indexer → SharedIndexInformer), with compact
// storage on the way. A client-go-style user builds a SharedIndexInformer
// with NewSharedIndexInformer (or NewInformer, the signature of
// controller-runtime's NewInformer hook) from a ListWatch
// (toolscache.ListWatch, or NewListWatch, NewRESTListWatch,
// NewDynamicListWatch, NewMetadataListWatch), adds handlers, runs it and
// reads its Indexer. It implements client-go's interfaces
// (toolscache.SharedIndexInformer, Store, Indexer...) and knows nothing of
// controller-runtime; pkg/cache builds a controller-runtime cache on top.
// The storage codecs are in package codec. The design of record (data path,
// vocabulary, invariants and their tests): docs/architecture.md.
//
// What a user must know (the rest: docs/architecture.md, section 9):
//
//   - Semantics are client-go's (v0.37): the store is updated before
//     handlers are notified, the transform runs once per received object,
//     a registration syncs once its handler processed the initial list.
//   - Queues are bounded by distinct keys, not events; each handler has its
//     own goroutine, and its panics are contained (CrashOnHandlerPanic).
//   - Reads take no lock; a relist is published whole; every list is a
//     consistent read; unchanged relisted objects go only to handlers due
//     for resync (with resync 0, to none; client-go sends them to all).
//   - Every list/watch error is a *ListWatchError (LastError).
//   - With Options.StorageCodec every read decodes an object of its own.
package informer

// The files, in data-path order (a map for readers of the code, kept out of
// the package doc):
//
//	listwatch.go              ListerWatcher adapters (typed REST, dynamic, metadata-only)
//	gvk_watch.go              a metadata watch that sets the GVK on every event
//	reflector.go              the Reflector: Run, ListAndWatch, the paginated list, admit, the watch
//	watch_list.go             the streamed list (WatchList, the default): streamedList
//	relist_set.go             relistSet: collects a WatchList relist
//	reflector_shard.go        the Reflector's shard selector: request option, keep, server sharding
//	backoff.go                the Reflector's retry delays
//	errors.go                 ListWatchError, the Reasons
//	resource_version.go       resourceVersion comparison (as integers when both parse)
//	progress.go               logging of a long list's progress
//	encode_stage.go           the encoding stage: queuedItem (compact storage), the item every later stage reads
//	compact_store.go          the Indexer's compact side: encode, decode, lazy handler objects, GetInto
//	storage_codec.go          StorageCodec and DecoderInto, implemented by package codec
//	initial_stream.go         the first list, handed to the DeltaFIFO in parts as it arrives
//	delta_fifo.go             the DeltaFIFO: key → Deltas, queue of keys, ≤ 3 per key; Replace, popBatch
//	delta_fifo_filter.go      the DeltaFIFO's shard filter and Evicted deltas
//	informer.go               SharedIndexInformer: the pop loop (store first, then handlers), resync
//	indexer_write.go          the Indexer's one write path: batches (a single write is a batch of one)
//	indexer.go                the Indexer: lock-free reads, Replace, AddIndexers
//	indexer_select.go         Select: a read that checks labels and index values before decoding
//	label_print.go            the label print of each cell: a Bloom filter Select checks first
//	indexer_build.go          BuildIndex, RemoveIndex: an index added or dropped without holding the writer
//	segment_table.go          the Indexer's content: per-key cells in copy-on-write segments
//	filed_values.go           index values: computed for an object, and filed per record in one slice
//	scoped_index.go           namespace-scoped indexes: one entry per value, read in controller-runtime's layout
//	value_copies.go           index values of objects decoded from records, copied before they are kept
//	hash_trie.go              the persistent hash trie (CHAMP) of each index's values
//	bucket.go                 a value's bucket: its cells in sorted chunks (a trie when big)
//	handler_queue.go          HandlerRegistration: one goroutine and one merging queue per handler
//	handler_sync_progress.go  a registration's initial-list progress, logged while it has not synced
//	informer_shard.go         moving a running informer to another shard selector
//	shard_selector.go         ShardSelector, HashRange: KEP-5866's selector, hash and the shard filter
//	shard_selector_server.go  what the API server accepts: selector length, coarsening
//	consistency_check.go      the drift check: the store compared with a metadata-only LIST
//	consistency_removals.go   the keys a running check must not count missing: removed after its list
//	snapshot_options.go       Snapshot: the option, its defaults, the build identity
//	snapshot_file.go          the snapshot file: format (with the shard hash), atomic write, checked read
//	snapshot_writer.go        writing the store at an interval and at stop, at the DeltaFIFO's drained RV
//	snapshot_load.go          loading a snapshot (checked against the shard) and decoding it into a private staging set
//	snapshot_resume.go        the warm start: catch-up watch to the server's RV, hand-off as the first list
//	snapshot_diff.go          the warm start after a 410: metadata LIST compared page by page, changed objects fetched meanwhile
//	snapshot_metrics.go       starts, loads, fetches and writes counted
//	metrics.go                Prometheus metrics of the pipeline and of each handler
//	doc.go                    this overview
//
// Tests use the scriptable fake ListerWatcher of package informertest.
