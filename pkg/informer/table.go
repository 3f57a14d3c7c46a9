package informer

// table is a dense key → object map, used by one goroutine: it collects the
// objects of a WatchList stream in arrival order until the stream's end.
type table struct {
	pos  map[string]int
	keys []string
	objs []any
}

func newTable(n int) table {
	return table{pos: make(map[string]int, n), keys: make([]string, 0, n), objs: make([]any, 0, n)}
}

func (t *table) set(key string, obj any) {
	if i, ok := t.pos[key]; ok {
		t.objs[i] = obj
		return
	}
	t.pos[key] = len(t.objs)
	t.keys = append(t.keys, key)
	t.objs = append(t.objs, obj)
}

// del removes key by moving the last entry into its slot.
func (t *table) del(key string) bool {
	i, ok := t.pos[key]
	if !ok {
		return false
	}
	last := len(t.objs) - 1
	if i != last {
		t.keys[i], t.objs[i] = t.keys[last], t.objs[last]
		t.pos[t.keys[i]] = i
	}
	t.keys[last], t.objs[last] = "", nil
	t.keys, t.objs = t.keys[:last], t.objs[:last]
	delete(t.pos, key)
	return true
}
