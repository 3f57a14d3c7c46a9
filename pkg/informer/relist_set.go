package informer

// relistSet is a dense key → object map, used by one goroutine: it collects the
// objects of a WatchList stream in arrival order until the stream's end
// (initial events are all ADDED: a later one for a key replaces the first).
type relistSet struct {
	pos  map[string]int
	keys []string
	objs []any
}

func newRelistSet(n int) relistSet {
	return relistSet{pos: make(map[string]int, n), keys: make([]string, 0, n), objs: make([]any, 0, n)}
}

func (t *relistSet) set(key string, obj any) {
	if i, ok := t.pos[key]; ok {
		t.objs[i] = obj
		return
	}
	t.pos[key] = len(t.objs)
	t.keys = append(t.keys, key)
	t.objs = append(t.objs, obj)
}
