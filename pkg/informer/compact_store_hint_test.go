package informer

import (
	"runtime"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	toolscache "k8s.io/client-go/tools/cache"
)

// A listed object's handlers get the object the list decoded while it is in
// memory (no decode), and an equal decode of the stored bytes once the garbage
// collector has reclaimed it.
func TestCompactStorageHandlersGetTheListedObjectWhileItLives(t *testing.T) {
	c := podCodec(t)
	ix := NewIndexerWithOptions(toolscache.DeletionHandlingMetaNamespaceKeyFunc, nil, IndexerOptions{Codec: c})

	listed := fullPod("ns", "a", "7")
	queued := ix.itemOf(listed, admitListed)
	if e := queued.(*queuedItem); e.obj != nil {
		t.Fatal("a listed object is kept by its queued item, want only a weak reference")
	}
	before := c.decodes.Load()
	got := resolveObject(ix.handlerView(queued))
	if got != any(listed) {
		t.Fatalf("handler got %p, want the listed object %p", got, listed)
	}
	if n := c.decodes.Load() - before; n != 0 {
		t.Fatalf("%d decodes for a listed object still in memory, want 0", n)
	}
	runtime.KeepAlive(listed)

	want := fullPod("ns", "b", "8")
	queued = ix.itemOf(fullPod("ns", "b", "8"), admitListed) // nothing else refers to it
	runtime.GC()
	runtime.GC()
	before = c.decodes.Load()
	got = resolveObject(ix.handlerView(queued))
	if n := c.decodes.Load() - before; n != 1 {
		t.Fatalf("%d decodes for a listed object the collector reclaimed, want 1", n)
	}
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Fatalf("handler got %v, want %v", got, want)
	}

	// A watch event's object is kept whole, as before.
	watched := fullPod("ns", "c", "9")
	if got := resolveObject(ix.handlerView(ix.itemOf(watched, admitWatched))); got != any(watched) {
		t.Fatalf("handler got %p for a watched object, want it %p", got, watched)
	}
}
